/**
 * `relay infty serve` in a real browser (headless Chromium through playwright-core): the runs
 * list shows the runs; a finished run shows its timeline, verdicts, checkpoints and rendered
 * deliverable README; events appended to a running run's store appear live; hostile HTML in an
 * objective, an event and artifacts never runs; a run of 100 000 events stays a few dozen rows.
 * A screenshot of the run page is saved in the test's temp dir (its path is printed);
 * RELAY_SERVE_SCREENSHOT=<file> also writes it there (docs/infty-serve.png is made so).
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { RunStore } from "../../src/infty/run-store.ts";
import { serveActions } from "../../src/infty/serve/actions.ts";
import { type ServeHandle, startServe } from "../../src/infty/serve/server.ts";
import { ok } from "../../src/util/result.ts";
import { launchChromium, noChromium } from "../support/chromium.ts";
import { longSuite } from "../support/long.ts";
import { FINISHED, HOSTILE, RUNNING, STALE, serveRuns } from "../support/serve-runs.ts";
import { skipBecause } from "../support/skip.ts";

const skip =
  longSuite("the browser tests of relay infty serve", "about a minute on 2 cores") ||
  skipBecause("the browser tests of relay infty serve", noChromium());
const BIG = "run-big";
const BIG_EVENTS = 100_000;

describe("relay infty serve in Chromium", { skip }, () => {
  let runs: Awaited<ReturnType<typeof serveRuns>>;
  let s: ServeHandle;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const shots = mkdtempSync(path.join(os.tmpdir(), "relay-serve-shots-"));

  before(async () => {
    runs = await serveRuns();
    writeFileSync(
      path.join(runs.runningDir, "artifacts", "evil.md"),
      `# Notes ${HOSTILE}\n\n[click](javascript:window.__pwned=4) [data](data:text/html,<script>x</script>)\n\n![img](x" onerror="window.__pwned=5)\n`,
    );
    await bigRun(runs.home);
    // The finished run's driver still holds its lease (as while it exits): the API says live, the page must not.
    const at = new Date().toISOString();
    writeFileSync(
      path.join(runs.finishedDir, "lease.json"),
      JSON.stringify({
        version: 1,
        epoch: 9,
        holder: { pid: process.pid, start_time: null, host: os.hostname() },
        acquired_at: at,
        heartbeat_at: at,
        released_at: null,
      }),
    );
    s = await startServe({ root: runs.root, host: "127.0.0.1", port: 0 }).then((r) =>
      "ok" in r ? r.ok : Promise.reject(new Error(r.error.message)),
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/Failed to load resource.*40[34]/.test(m.text()))
        problems.push(`console: ${m.text()}`);
    });
    page.on("dialog", (d) => {
      problems.push(`a dialog opened: ${d.message()}`);
      void d.dismiss();
    });
  });
  after(async () => {
    await browser?.close();
    await s?.close();
    await runs?.[Symbol.asyncDispose]();
  });

  const pwned = () => page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned);

  test("the runs list shows the finished and the running run, and the one whose driver is gone as stale", async () => {
    await page.goto(s.url);
    await page.locator(`tr[data-run="${FINISHED}"]`).waitFor();
    await page.locator(`tr[data-run="${RUNNING}"] .live`).waitFor();
    assert.match((await page.locator(`tr[data-run="${FINISHED}"]`).textContent()) ?? "", /complete.*yes/s);
    assert.equal(
      (await (await fetch(`${s.url}/api/runs/${FINISHED}`)).json()).liveness.live,
      true,
      "the fixture's lease is held",
    );
    assert.equal(await page.locator(`tr[data-run="${FINISHED}"] .live`).count(), 0, "a finished run is not live");
    const stale = page.locator(`tr[data-run="${STALE}"] [data-testid="stale"]`);
    await stale.waitFor();
    assert.equal(
      await stale.getAttribute("title"),
      `stale: driver pid ${runs.staleDriverPid} gone; resume with: relay infty resume ${STALE}`,
    );
    assert.equal(await page.locator(`tr[data-run="${STALE}"] .live`).count(), 0);
    assert.equal(await pwned(), undefined, "the hostile objective did not run");
  });

  test("with a fleet (serve --db), the runs page shows its workers and runs, hostile text kept as text", async () => {
    const fleet = await startServe({
      root: runs.root,
      host: "127.0.0.1",
      port: 0,
      fleet: async () =>
        ok({
          location: "postgres://relay:***@db.example/fleet",
          workers: [
            {
              name: "w-a",
              host: "box-1",
              pid: 41,
              max_runs: 2,
              runs: 1,
              started_at: "2026-12-06T00:00:00Z",
              heartbeat_age_s: 3,
              stopped: false,
            },
          ],
          runs: [
            {
              id: "fleet-run-1",
              state: "running",
              worker: "w-a",
              priority: 0,
              submitter: "ann@laptop",
              objective: `fix it ${HOSTILE}`,
              repo: null,
              reason: null,
              takeovers: 0,
              submitted_at: "2026-12-06T00:00:00Z",
              updated_at: "2026-12-06T00:00:00Z",
              lease: { epoch: 2, holder: "pid 77 on box-1", heartbeat_age_s: 4, released: false },
            },
          ],
        }),
    }).then((r) => ("ok" in r ? r.ok : Promise.reject(new Error(r.error.message))));
    try {
      await page.goto(fleet.url);
      const row = page.locator('[data-testid="fleet-runs"] tr[data-fleet-run="fleet-run-1"]');
      await row.waitFor();
      assert.match((await row.textContent()) ?? "", /running.*w-a.*epoch 2, pid 77 on box-1, 4 s.*ann@laptop.*fix it/s);
      assert.match(
        (await page.locator('[data-testid="fleet-workers"] tr[data-worker="w-a"]').textContent()) ?? "",
        /w-a.*box-1.*41.*1\/2.*3 s ago/s,
      );
      await page
        .locator('[data-testid="fleet"] .note', {
          hasText: "1 worker(s) running; database postgres://relay:***@db.example/fleet",
        })
        .waitFor();
      assert.equal(await pwned(), undefined, "the hostile objective did not run");
    } finally {
      await fleet.close();
    }
  });

  test("a stale run's page says why and how to resume; the header's label is about the page's updates", async () => {
    await page.goto(`${s.url}/#/run/${STALE}`);
    await page
      .locator(".stale-line", {
        hasText: `driver pid ${runs.staleDriverPid} gone; resume with: relay infty resume ${STALE}`,
      })
      .waitFor();
    await page.locator("#conn", { hasText: "updates: connected" }).waitFor();
  });

  test("a finished run: status, timeline to its end, budget chart, checkpoints, the deliverable README rendered", async () => {
    await page.goto(s.url);
    await page.click(`tr[data-run="${FINISHED}"] a.run-link`);
    await page.locator('[data-testid="status"]', { hasText: "complete" }).waitFor();
    await page.locator('.row[data-type="run_finished"]').waitFor();
    assert.equal(await page.locator('[data-testid="run-head"] .live').count(), 0, "a finished run is not live");
    await page.locator('.row[data-type="verdict"]', { hasText: "deliverable/answer.txt says 42" }).waitFor();
    await page.locator('[data-testid="markdown"] h1', { hasText: "Answer" }).waitFor();
    await page.locator('[data-testid="budget"] svg rect.fill').first().waitFor();
    await page.locator('[data-testid="checkpoints"] li', { hasText: "· delivery ·" }).waitFor();
    await page.locator('.row[data-type="verdict"]').last().click();
    await page.locator('[data-testid="event-json"]', { hasText: '"verdict": "pass"' }).waitFor();
    // A role's signal reads as what it asks or says, not as raw JSON.
    await page.locator('.row[data-type="role"] .kind', { hasText: "asks to verify" }).first().waitFor();
    await page.locator('.row[data-type="role"] .kind', { hasText: "verdict PASS" }).first().waitFor();
  });

  test("a running run: appended events appear live; hostile HTML in the objective, an event and artifacts stays text", async () => {
    await page.goto(`${s.url}/#/run/${RUNNING}`);
    await page.locator('.row[data-type="heartbeat"]').waitFor();
    await page.locator("text=● live").first().waitFor();
    runs.append({
      type: "verdict",
      role: "verifier-1",
      verdict: "fail",
      reasons: [`live reason ${HOSTILE}`],
      claim_path: "memory/claims/x.json",
    });
    await page.locator('.row[data-type="verdict"]', { hasText: "live reason" }).waitFor();
    runs.append(
      { type: "checkpoint", name: "ckpt-0001", trigger: "handoff", summary: "live checkpoint" },
      { type: "role", role: "solver", event: { kind: "tool_call", name: "exec_command", text: "npm test" } },
    );
    await page.locator('.row[data-type="role"]', { hasText: "npm test" }).waitFor();
    await page.locator('.row[data-type="verdict"]').click();
    await page.locator('[data-testid="event-json"]', { hasText: "<script>" }).waitFor();
    await page.locator('[data-testid="files"] a[data-path="artifacts/evil.html"]').click();
    await page.locator('[data-testid="file-text"]', { hasText: "<script>" }).waitFor();
    await page.locator('[data-testid="files"] a[data-path="artifacts/evil.md"]').click();
    await page.locator('[data-testid="markdown"] h1', { hasText: "<script>" }).waitFor();
    assert.equal(await page.locator('[data-testid="markdown"] a').count(), 0, "no javascript: or data: link survived");
    assert.equal(await page.locator("#app script, #app img, #app iframe").count(), 0);
    await page.screenshot({ path: path.join(shots, "run-running.png"), fullPage: true });
    assert.equal(await pwned(), undefined, "nothing hostile ran");
  });

  test("the finished run's page as a screenshot", async () => {
    await page.goto(`${s.url}/#/run/${FINISHED}`);
    await page.locator('[data-testid="markdown"] h1').waitFor();
    await page.locator('[data-testid="checkpoints"] li').first().waitFor();
    await page.locator('.row[data-type="run_finished"]').waitFor();
    const file = path.join(shots, "run-finished.png");
    await page.screenshot({ path: file });
    process.stderr.write(`screenshot of the run page: ${file}\n`);
    if (process.env.RELAY_SERVE_SCREENSHOT) copyFileSync(file, process.env.RELAY_SERVE_SCREENSHOT);
  });

  test("100 000 events: a few dozen rows in the page, pages fetched as the list scrolls", async () => {
    const requests: string[] = [];
    page.on("request", (r) => r.url().includes("/events?") && requests.push(r.url()));
    await page.goto(`${s.url}/#/run/${BIG}`);
    await page.locator(`.row[data-n="${BIG_EVENTS - 1}"]`).waitFor();
    assert.ok((await page.locator(".row").count()) < 120);
    await page.locator(".timeline").evaluate((el, n) => (el.scrollTop = n * 24), 50_000);
    await page.locator('.row[data-n="50000"]', { hasText: "event 50000" }).waitFor();
    assert.ok((await page.locator(".row").count()) < 120);
    assert.ok(requests.length <= 6, `a handful of page requests, not a scan: ${requests.join(" ")}`);
    assert.deepEqual(problems, []);
  });
});

describe("relay infty serve --allow-actions in Chromium", { skip }, () => {
  test("the one-time URL logs the page in; a note and a resume from the page land in the run's log live", async () => {
    await using runs = await serveRuns();
    const handler = serveActions(runs.root);
    assert.ok("ok" in handler);
    const started = await startServe({ root: runs.root, host: "127.0.0.1", port: 0, actions: handler.ok });
    assert.ok("ok" in started);
    const s = started.ok;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(s.openUrl);
      assert.equal(page.url(), `${s.url}/`, "the token left the address bar");
      await page.click(`tr[data-run="${RUNNING}"] a.run-link`);
      await page.locator('[data-testid="stop"]').waitFor();
      await page.fill(".note-text", "prefer small steps");
      await page.click('[data-testid="send-note"]');
      await page.locator('[data-testid="action-result"]', { hasText: "note op-0001 left" }).waitFor();
      await page.locator('.row[data-type="operator"]', { hasText: "prefer small steps" }).waitFor();
      await page.goto(`${s.url}/#/run/${FINISHED}`);
      await page.locator('.row[data-type="run_finished"]').waitFor();
      await page.click('[data-testid="resume"]');
      await page.locator('[data-testid="action-result"]', { hasText: "resuming run" }).waitFor();
      await page.locator('.row[data-type="run_finished"]', { hasText: "already complete" }).waitFor();
    } finally {
      await browser.close();
      await s.close();
    }
  });
});

/** A run whose log holds BIG_EVENTS lines. */
async function bigRun(home: string): Promise<void> {
  const r = await RunStore.create(home, {
    run_id: BIG,
    objective: "a long one",
    verifiers: 1,
    consensus: "all",
    max_turns: 10,
    max_wall_ms: 60_000,
  });
  if ("error" in r) throw new Error(r.error.message);
  const at = new Date().toISOString();
  const lines: string[] = [];
  for (let i = 0; i < BIG_EVENTS; i++)
    lines.push(
      JSON.stringify({
        at,
        type: "role",
        role: i % 2 ? "solver" : "verifier-1",
        event: { kind: "message", text: `event ${i}` },
      }),
    );
  writeFileSync(path.join(r.ok.dir, "events.jsonl"), lines.join("\n") + "\n");
}

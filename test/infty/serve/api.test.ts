/**
 * `relay infty serve`'s API over real run stores (a scripted finished run, a hand-made running
 * one): the runs list, a run in detail, events as JSON pages and as SSE (from an index, after a
 * Last-Event-ID, live as lines are appended), files with their confinement, checkpoints, and the
 * guards (Host, token, cookie, no CORS, content types). No browser, no Bun needed.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  CheckpointListSchema,
  EventsPageSchema,
  FileListSchema,
  IndexedEventSchema,
  RunDetailSchema,
  RunListSchema,
} from "../../../src/infty/serve/api-schemas.ts";
import { type ServeHandle, startServe } from "../../../src/infty/serve/server.ts";
import { FINISHED, HOSTILE, RUNNING, raw, STALE, serveRuns, sse } from "../../support/serve-runs.ts";

type Runs = Awaited<ReturnType<typeof serveRuns>>;

async function start(o: Partial<Parameters<typeof startServe>[0]> & { root: string }): Promise<ServeHandle> {
  const r = await startServe({ host: "127.0.0.1", port: 0, ...o });
  assert.ok("ok" in r, JSON.stringify(r));
  return r.ok;
}

const json = (body: string) => JSON.parse(body) as unknown;

describe("relay infty serve: API", () => {
  let runs: Runs;
  let s: ServeHandle;
  before(async () => {
    runs = await serveRuns();
    s = await start({ root: runs.root });
  });
  after(async () => {
    await s?.close();
    await runs?.[Symbol.asyncDispose]();
  });

  test("GET /api/runs lists both runs: state, roles and models, tokens, deliverable", async () => {
    const r = await raw(s.url, "/api/runs");
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /^application\/json/);
    assert.equal(r.headers["x-content-type-options"], "nosniff");
    const list = RunListSchema.parse(json(r.body));
    const finished = list.runs.find((x) => x.id === FINISHED)!;
    const running = list.runs.find((x) => x.id === RUNNING)!;
    assert.equal(finished.status, "complete");
    assert.equal(finished.deliverable, true);
    assert.equal(finished.live, false);
    assert.deepEqual(
      finished.roles.map((x) => x.role),
      ["solver", "director", "verifier-1"],
    );
    assert.match(finished.roles[0]!.model, /^m \(openai-responses\)$/);
    assert.equal(running.status, "running");
    assert.equal(running.live, true, "fresh heartbeat and this process's pid");
    assert.equal(running.tokens_used, 1200);
    assert.equal(running.deliverable, false);
  });

  test("a run whose driver is gone is stale, not live, in the list and in detail, with the resume command", async () => {
    const list = RunListSchema.parse(json((await raw(s.url, "/api/runs")).body));
    const stale = list.runs.find((x) => x.id === STALE)!;
    const why = `stale: driver pid ${runs.staleDriverPid} gone; resume with: relay infty resume ${STALE}`;
    assert.deepEqual([stale.status, stale.live, stale.stale], ["running", false, why]);
    assert.equal(list.runs.find((x) => x.id === RUNNING)!.stale, undefined);
    assert.equal(list.runs.find((x) => x.id === FINISHED)!.stale, undefined);
    const d = RunDetailSchema.parse(json((await raw(s.url, `/api/runs/${STALE}`)).body));
    assert.deepEqual([d.liveness.live, d.liveness.stale, d.summary.stale], [false, why, why]);
  });

  test("GET /api/runs/:id: run.json, liveness and each role's budget from the log", async () => {
    const d = RunDetailSchema.parse(json((await raw(s.url, `/api/runs/${FINISHED}`)).body));
    assert.equal(d.run.run_id, FINISHED);
    assert.equal(d.liveness.live, false);
    const solver = d.budget.roles.find((x) => x.role === "solver")!;
    assert.ok(solver.turns >= 3 && solver.tokens > 0 && solver.busy_ms > 0, JSON.stringify(d.budget.roles));
    assert.deepEqual(
      d.budget.roles.map((x) => x.role),
      ["solver", "director", "verifier-1"],
    );
    assert.ok(d.budget.roles.some((x) => x.role === "verifier-1" && x.turns >= 1));
    assert.ok(d.events > 10);
    assert.equal(d.actions, false);
    const running = RunDetailSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}`)).body));
    assert.equal(running.liveness.pid, process.pid);
    assert.deepEqual(
      running.budget.roles.map((x) => [x.role, x.tokens, x.turns]),
      [
        ["solver", 1200, 1],
        ["director", 0, 0],
        ["verifier-1", 0, 0],
        ["verifier-2", 0, 0],
      ],
    );
    const missing = await raw(s.url, "/api/runs/nope");
    assert.equal(missing.status, 404);
    assert.match(missing.body, /no run nope/);
  });

  test("the finished run's log tells the story: turns, a failed and a passed verdict with reasons, checkpoints, the end", async () => {
    const page = EventsPageSchema.parse(
      json((await raw(s.url, `/api/runs/${FINISHED}/events?from=0&limit=2000`)).body),
    );
    const types = page.events.map((e) => e.event.type);
    for (const t of ["run_started", "role", "handoff", "verdict", "verification_summary", "checkpoint", "run_finished"])
      assert.ok(types.includes(t), `${t} in ${types.join(",")}`);
    const verdicts = page.events.map((e) => e.event).filter((e) => e.type === "verdict") as unknown as Array<{
      verdict: string;
      reasons: string[];
    }>;
    assert.deepEqual(
      verdicts.map((v) => v.verdict),
      ["fail", "pass", "pass"],
    );
    assert.match(verdicts[0]!.reasons[0]!, /says 41/);
  });

  test("events in pages: ?from=&limit= with the total; each n is the line's index in events.jsonl", async () => {
    const file = readFileSync(path.join(runs.finishedDir, "events.jsonl"), "utf8").split("\n").filter(Boolean);
    const page = EventsPageSchema.parse(json((await raw(s.url, `/api/runs/${FINISHED}/events?from=3&limit=4`)).body));
    assert.equal(page.total, file.length);
    assert.deepEqual(
      page.events.map((e) => e.n),
      [3, 4, 5, 6],
    );
    assert.deepEqual(
      page.events.map((e) => e.event),
      [3, 4, 5, 6].map((i) => JSON.parse(file[i]!)),
    );
    const end = EventsPageSchema.parse(
      json((await raw(s.url, `/api/runs/${FINISHED}/events?from=${file.length - 1}&limit=10`)).body),
    );
    assert.equal(end.events.length, 1);
    assert.equal((await raw(s.url, `/api/runs/${FINISHED}/events?from=-1`)).status, 400);
  });

  test("SSE: from ?from=N, then each appended line live with its index as id; a reconnect with Last-Event-ID misses nothing", async () => {
    const before = EventsPageSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}/events?limit=0`)).body)).total;
    const a = await sse(s.url, `/api/runs/${RUNNING}/events?from=1`);
    assert.equal(a.status, 200);
    for (let n = 1; n < before; n++) {
      const m = await a.messages.next();
      assert.equal(m.id, String(n));
      assert.equal(IndexedEventSchema.parse(JSON.parse(m.data)).n, n);
    }
    runs.append(
      { type: "handoff", from: "solver", to: "director", summary: "live one" },
      { type: "directive", directive: "live two", rationale: null },
    );
    const live1 = await a.messages.next();
    const live2 = await a.messages.next();
    assert.equal(live1.id, String(before));
    assert.match(live1.data, /live one/);
    assert.equal(live2.id, String(before + 1));
    a.close();
    runs.append({ type: "warning", message: "while away" });
    const b = await sse(s.url, `/api/runs/${RUNNING}/events?from=0`, { "last-event-id": String(before + 1) });
    const missed = await b.messages.next();
    assert.equal(missed.id, String(before + 2));
    assert.match(missed.data, /while away/);
    b.close();
  });

  test("a torn line is shown as unreadable and the next line still gets its own index", async () => {
    const total = EventsPageSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}/events?limit=0`)).body)).total;
    runs.append();
    const { appendFileSync } = await import("node:fs");
    appendFileSync(path.join(runs.runningDir, "events.jsonl"), '{"type":"tor');
    const page1 = EventsPageSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}/events?from=${total}`)).body));
    assert.equal(page1.total, total, "a line without its newline is not served yet");
    appendFileSync(path.join(runs.runningDir, "events.jsonl"), "\n");
    runs.append({ type: "warning", message: "after the tear" });
    const page2 = EventsPageSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}/events?from=${total}`)).body));
    assert.deepEqual(
      page2.events.map((e) => e.event.type),
      ["unreadable", "warning"],
    );
  });

  test("files: a list of the four folders; a file as text/plain with nosniff and a sandbox CSP; HTML is never served as HTML", async () => {
    const list = FileListSchema.parse(json((await raw(s.url, `/api/runs/${FINISHED}/files`)).body));
    const paths = list.files.map((f) => f.path);
    for (const p of ["artifacts/answer.txt", "deliverable/README.md", "index/claims.json", "memory/notes.jsonl"])
      assert.ok(paths.includes(p), `${p} in ${paths.join(" ")}`);
    const f = await raw(s.url, `/api/runs/${FINISHED}/files/artifacts/answer.txt`);
    assert.equal(f.status, 200);
    assert.equal(f.body, "42\n");
    assert.equal(f.headers["content-type"], "text/plain; charset=utf-8");
    assert.equal(f.headers["x-content-type-options"], "nosniff");
    assert.match(String(f.headers["content-security-policy"]), /^sandbox/);
    const evil = await raw(s.url, `/api/runs/${RUNNING}/files/artifacts/evil.html`);
    assert.equal(evil.status, 200);
    assert.equal(evil.headers["content-type"], "text/plain; charset=utf-8");
    assert.ok(evil.body.includes(HOSTILE));
    const dir = FileListSchema.parse(json((await raw(s.url, `/api/runs/${FINISHED}/files/deliverable`)).body));
    assert.ok(dir.files.some((x) => x.path === "deliverable/answer.txt"));
  });

  test("files: no way out through .., %2e%2e, an encoded slash, an absolute path, another folder or a symlink", async () => {
    const tries: Array<[string, number]> = [
      ["artifacts/../run.json", 400],
      ["artifacts/%2e%2e/run.json", 400],
      ["artifacts/%2E%2E/%2E%2E/%2E%2E/etc/passwd", 400],
      ["artifacts%2f..%2frun.json", 400],
      ["artifacts/..%2f..%2fetc%2fpasswd", 400],
      ["/etc/passwd", 400],
      ["%2fetc%2fpasswd", 400],
      ["run.json", 400],
      [".checkpoints.git/config", 400],
      ["artifacts/passwd", 403],
      ["artifacts/missing.txt", 404],
      ["artifacts/%zz", 400],
    ];
    for (const [p, status] of tries) {
      const r = await raw(s.url, `/api/runs/${RUNNING}/files/${p}`);
      assert.equal(r.status, status, `${p}: ${r.body}`);
      assert.doesNotMatch(r.body, /root:/, p);
    }
    const list = FileListSchema.parse(json((await raw(s.url, `/api/runs/${RUNNING}/files`)).body));
    assert.ok(!list.files.some((f) => f.path === "artifacts/passwd"), "a link out of the store is not listed");
    assert.equal((await raw(s.url, `/api/runs/..%2f${RUNNING}`)).status, 404);
  });

  test("checkpoints of the finished run, oldest first", async () => {
    const c = CheckpointListSchema.parse(json((await raw(s.url, `/api/runs/${FINISHED}/checkpoints`)).body));
    assert.ok(c.checkpoints.length >= 4);
    assert.equal(c.checkpoints[0]!.id, "ckpt-0001");
    assert.equal(c.checkpoints.at(-1)!.trigger, "delivery");
  });

  test("the page: HTML with a strict CSP, its script and style from the server; no CORS headers anywhere; writes refused", async () => {
    const page = await raw(s.url, "/");
    assert.equal(page.status, 200);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    const csp = String(page.headers["content-security-policy"]);
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.doesNotMatch(page.body, /<script>|<script [^>]*>[^<]/, "no inline script");
    for (const asset of ["/app.js", "/app.css"]) assert.equal((await raw(s.url, asset)).status, 200, asset);
    const cross = await raw(s.url, "/api/runs", { headers: { origin: "http://evil.example" } });
    assert.equal(cross.headers["access-control-allow-origin"], undefined);
    const pre = await raw(s.url, "/api/runs", {
      method: "OPTIONS",
      headers: { origin: "http://evil.example", "access-control-request-method": "GET" },
    });
    assert.equal(pre.status, 405);
    assert.equal(pre.headers["access-control-allow-origin"], undefined);
    assert.equal(
      (await raw(s.url, `/api/runs/${RUNNING}/actions/stop`, { method: "POST" })).status,
      405,
      "no actions without --allow-actions",
    );
  });

  test("loopback: a request whose Host is not a loopback name (DNS rebinding) is refused", async () => {
    const r = await raw(s.url, "/api/runs", { headers: { host: "evil.example:7788" } });
    assert.equal(r.status, 403);
    assert.match(r.body, /loopback host names/);
    assert.equal((await raw(s.url, "/api/runs", { headers: { host: `localhost:${s.port}` } })).status, 200);
  });
});

describe("relay infty serve: token", () => {
  test("with a token every request needs it: bearer, or the cookie /?token= sets (HttpOnly, SameSite=Strict) before redirecting to /", async () => {
    await using runs = await serveRuns();
    const s = await start({ root: runs.root, token: "sekrit-token" });
    try {
      assert.equal(s.openUrl, `${s.url}/?token=sekrit-token`);
      assert.equal((await raw(s.url, "/api/runs")).status, 401);
      assert.equal((await raw(s.url, "/")).status, 401);
      assert.equal((await raw(s.url, "/api/runs", { headers: { authorization: "Bearer wrong" } })).status, 401);
      assert.equal((await raw(s.url, "/api/runs", { headers: { authorization: "Bearer sekrit-token" } })).status, 200);
      assert.equal((await raw(s.url, "/?token=wrong")).status, 401);
      const login = await raw(s.url, "/?token=sekrit-token");
      assert.equal(login.status, 303);
      assert.equal(login.headers.location, "/");
      const cookie = String(login.headers["set-cookie"]);
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      const pair = cookie.split(";")[0]!;
      assert.equal((await raw(s.url, "/", { headers: { cookie: pair } })).status, 200);
      assert.equal(
        (await raw(s.url, `/api/runs/${FINISHED}/files/artifacts/answer.txt`, { headers: { cookie: pair } })).status,
        200,
      );
    } finally {
      await s.close();
    }
  });

  test("another host than loopback gets a generated token; a port in use is named with the fix", async () => {
    await using runs = await serveRuns();
    const s = await start({ root: runs.root, host: "0.0.0.0" });
    try {
      assert.ok(s.token && s.token.length >= 20);
      assert.equal((await raw(s.url.replace("0.0.0.0", "127.0.0.1"), "/api/runs")).status, 401);
      const busy = await startServe({ root: runs.root, host: "127.0.0.1", port: await takenPort() });
      assert.ok("error" in busy);
      assert.match(busy.error.message, /port \d+ on 127\.0\.0\.1 is in use.*--port/);
    } finally {
      await s.close();
    }
  });
});

/** A port some server listens on (kept open until the process ends: the test only needs it busy). */
function takenPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.listen(0, "127.0.0.1", () => resolve((srv.address() as { port: number }).port));
  });
}

/**
 * The sessions of an infty run's roles belong to the run: `relay sessions list`, `sessions show
 * last`, `relay run --resume last` / `--fork last` and the picker leave them out (`--all` and
 * `--source infty` show them); `relay run --resume <a role's session>` is refused with the
 * command that continues the run. Real relay processes on real rollout files.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { pickSession } from "../../src/cli/session-picker.ts";
import { userMessage } from "../../src/model/items.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { SessionListSchema } from "../../src/rollout/summary.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { type Harness, harness } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { runRelayAsync } from "../support/self.ts";

const env = (home: string) => ({ ...process.env, RELAY_HOME: home, NO_COLOR: "1" });
const relay = (h: Harness, args: string[]) => runRelayAsync(args, env(h.home));

/** A role session as an infty run writes it, started `minutesAgo` before now (newer than the user's). */
async function roleSession(
  home: string,
  infty: { run_id: string; role: string } | undefined,
  minutesAgo: number,
): Promise<string> {
  const w = await RolloutWriter.create({
    home,
    meta: { cwd: "/runs/r1", source: "infty", ...(infty ? { infty } : {}) },
    now: new Date(Date.now() - minutesAgo * 60_000),
  });
  assert.ok("ok" in w);
  await w.ok.appendItems([
    userMessage(JSON.stringify({ type: "verification_request", claim_path: "memory/claims/a.json" })),
  ]);
  await w.ok.close();
  return w.ok.id;
}

describe("infty role sessions and relay run", () => {
  test("left out of sessions list, show last, --resume last and --fork last; shown by --all and --source infty; resuming one names its run", async () => {
    await using h = await harness();
    h.server.enqueue(reply().text("my answer"));
    const mine = await relay(h, [
      "run",
      "--base-url",
      h.server.baseUrl,
      "-m",
      "m",
      "-s",
      "danger-full-access",
      "-C",
      h.workspace,
      "my own task",
    ]);
    assert.equal(mine.status, 0, mine.stderr);
    const [own] = await listRollouts(h.home);
    const verifier = await roleSession(h.home, { run_id: "r1", role: "verifier-1" }, -1);
    const legacy = await roleSession(h.home, undefined, -2);

    const list = SessionListSchema.parse(JSON.parse((await relay(h, ["sessions", "list", "--json"])).stdout));
    assert.deepEqual(
      list.sessions.map((s) => s.id),
      [own!.id],
    );
    assert.equal(list.hidden, 2);
    const text = await relay(h, ["sessions", "list"]);
    assert.match(
      text.stdout,
      /my own task\n\(2 sessions of infty runs' roles left out: --all or --source infty; continue a run with relay infty resume <run-id>\)\n$/,
    );
    assert.doesNotMatch(text.stdout, /verification_request/);

    const all = await relay(h, ["sessions", "list", "--all"]);
    assert.match(all.stdout, new RegExp(`${legacy} .*\\[infty role\\] \\{"type":"verification_request"`));
    assert.match(all.stdout, new RegExp(`${verifier} .*\\[infty r1: verifier-1\\] \\{"type":"verification_request"`));
    assert.match(all.stdout, new RegExp(`${own!.id} .*my own task`));
    const roles = SessionListSchema.parse(
      JSON.parse((await relay(h, ["sessions", "list", "--source", "infty", "--json"])).stdout),
    );
    assert.deepEqual(
      roles.sessions.map((s) => [s.id, s.source, s.infty]),
      [
        [legacy, "infty", null],
        [verifier, "infty", { run_id: "r1", role: "verifier-1" }],
      ],
    );

    const last = await relay(h, ["sessions", "show", "last"]);
    assert.match(last.stdout, new RegExp(`^session  ${own!.id}\\n`));
    const shown = await relay(h, ["sessions", "show", verifier]);
    assert.equal(shown.status, 0, "a role session can still be read");

    h.server.enqueue(reply().text("more done"));
    const resumed = await relay(h, [
      "run",
      "--resume",
      "last",
      "--base-url",
      h.server.baseUrl,
      "-m",
      "m",
      "-s",
      "danger-full-access",
      "more",
    ]);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.match(
      JSON.stringify(h.server.requests.at(-1)!.body.input),
      /my own task[\s\S]*more/,
      "the user's session went on",
    );

    for (const flag of ["--resume", "--fork"]) {
      const refused = await relay(h, ["run", flag, verifier, "--base-url", h.server.baseUrl, "-m", "m", "x"]);
      assert.equal(refused.status, 2, refused.stderr);
      assert.match(
        refused.stderr,
        new RegExp(`session ${verifier} is the verifier-1 of infty run r1; its run drives it: relay infty resume r1`),
      );
    }
    const old = await relay(h, [
      "run",
      "--resume",
      legacy.slice(0, 13),
      "--base-url",
      h.server.baseUrl,
      "-m",
      "m",
      "x",
    ]);
    assert.equal(old.status, 2);
    assert.match(old.stderr, /is a role of an infty run, which drives it: find the run with relay infty list/);
    assert.equal(h.server.requests.length, 2, "no refused resume reached the model");

    const out = new PassThrough();
    let shownList = "";
    out.on("data", (d: Buffer) => (shownList += d.toString()));
    const input = new PassThrough();
    input.end("q\n");
    const picked = await pickSession(h.home, input, out);
    assert.deepEqual(picked, { none: "cancelled" });
    assert.match(shownList, /my own task/);
    assert.doesNotMatch(shownList, /verification_request/, "the picker offers no role session");
  });

  test("after an infty run, relay sessions list shows none of its roles' sessions", async () => {
    await using h = await harness();
    const run = await relay(h, [
      "infty",
      "run",
      "--no-repo",
      "--run-id",
      "demo",
      "-s",
      "danger-full-access",
      "--script",
      path.join(REPO_ROOT, "examples/infty-demo.json"),
      "build wc",
    ]);
    assert.equal(run.status, 0, run.stderr);
    const list = SessionListSchema.parse(JSON.parse((await relay(h, ["sessions", "list", "--json"])).stdout));
    assert.deepEqual(list.sessions, []);
    assert.ok(list.hidden >= 3, `the roles' sessions are hidden (${list.hidden})`);
    const roles = SessionListSchema.parse(
      JSON.parse((await relay(h, ["sessions", "list", "--source", "infty", "--json"])).stdout),
    );
    assert.deepEqual([...new Set(roles.sessions.map((s) => s.infty?.run_id))], ["demo"]);
    const none = await relay(h, ["run", "--resume", "last", "--base-url", h.server.baseUrl, "-m", "m", "x"]);
    assert.equal(none.status, 2);
    assert.match(
      none.stderr,
      /there are no sessions in .* yet \(infty runs' role sessions do not count: relay infty list shows the runs\)/,
    );
  });
});

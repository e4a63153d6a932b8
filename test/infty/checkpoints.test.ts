import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { RESTORE_INTENT_FILE, type RestoreIntent } from "../../src/infty/checkpoint-format.ts";
import {
  findCheckpoint,
  gitdirOf,
  listCheckpoints,
  readCheckpoint,
  takeCheckpoint,
} from "../../src/infty/checkpoints.ts";
import { readArtifactsIndex, readClaimsIndex } from "../../src/infty/index-files.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { restoreRun } from "../../src/infty/restore.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { type FakeModelServer, reply } from "../support/fake-model-server.ts";
import { type Captured, CLAIM, DELIVER, folderFiles, runFirstTimeline, setup, sig } from "../support/infty-timeline.ts";

function objectCount(gitdir: string): number {
  const objects = path.join(gitdir, "objects");
  return readdirSync(objects)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .reduce((n, d) => n + readdirSync(path.join(objects, d)).length, 0);
}

async function load(home: string, runId: string): Promise<RunStore> {
  const s = await RunStore.load(home, runId);
  assert.ok("ok" in s, JSON.stringify(s));
  return s.ok;
}

/** Every session rollout under a home. */
const sessionFiles = (home: string) =>
  (readdirSync(path.join(home, "sessions"), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => path.join(home, "sessions", f));

const rolloutsOf = (store: RunStore) => new Map(store.state.roles.map((r) => [r.role, r.rollout_path!]));

/** The text of every user message in a recorded request. */
const inputText = (server: FakeModelServer, i: number) => JSON.stringify(server.requests[i]!.body.input ?? []);

/** The replies of the second timeline, after the restore: a different fix, pass, deliver. */
function enqueueSecondTimeline(server: FakeModelServer): void {
  server.enqueue(
    reply().toolCall("exec_command", { cmd: "printf '42\\n' > artifacts/answer.txt" }),
    sig({ type: "verification_request", claim_path: CLAIM, notes: "second timeline" }),
    sig({ verdict: "pass", reasons: ["42 now"], suggestions: [] }),
    reply().toolCall("exec_command", { cmd: DELIVER }),
    sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "42, second timeline" }),
    sig({ verdict: "pass", reasons: ["deliverable checked"], suggestions: [] }),
  );
}

/** The checkpoint the Verifiers' failing round left: the one to go back to. */
function afterFailure(captured: Captured[]): Captured {
  const i = captured.findIndex((c) => c.trigger === "verification_pass");
  const c = captured[i - 2];
  assert.ok(c && c.trigger === "handoff", `checkpoints: ${captured.map((x) => `${x.id}:${x.trigger}`).join(" ")}`);
  return c;
}

describe("relay infty checkpoints", () => {
  test("a checkpoint after every handoff; an unchanged store adds only a record, a tree and a commit", async () => {
    await using t = await setup();
    const created = await RunStore.create(t.home, {
      run_id: "c",
      objective: "o",
      verifiers: 1,
      consensus: "all",
      max_turns: 5,
      max_wall_ms: 60_000,
    });
    assert.ok("ok" in created);
    const store = created.ok;
    writeFileSync(path.join(store.dir, "artifacts", "a.txt"), "a");
    mkdirSync(path.join(store.dir, "artifacts", "sub"));
    writeFileSync(path.join(store.dir, "artifacts", "sub", "b.txt"), "b");
    const first = await takeCheckpoint(store, "handoff", "one");
    assert.ok("ok" in first, JSON.stringify(first));
    const before = objectCount(gitdirOf(store.dir));
    const second = await takeCheckpoint(store, "verification_pass", "two");
    assert.ok("ok" in second);
    assert.equal(
      objectCount(gitdirOf(store.dir)) - before,
      3,
      "nothing changed: only checkpoint.json, the root tree and the commit are new",
    );
    writeFileSync(path.join(store.dir, "artifacts", "sub", "b.txt"), "changed");
    const third = await takeCheckpoint(store, "handoff", "three");
    assert.ok("ok" in third);
    const trees = await Promise.all(
      [first.ok, second.ok, third.ok].map(
        async (c) => (await readCheckpoint(store.dir, c)) as { ok: { trees: Map<string, string> } },
      ),
    );
    assert.equal(trees[0]!.ok.trees.get("artifacts"), trees[1]!.ok.trees.get("artifacts"));
    assert.notEqual(trees[1]!.ok.trees.get("artifacts"), trees[2]!.ok.trees.get("artifacts"), "a changed file is seen");
    assert.equal(trees[1]!.ok.trees.get("memory"), trees[2]!.ok.trees.get("memory"));
    const list = await listCheckpoints(store.dir);
    assert.ok("ok" in list);
    assert.deepEqual(
      list.ok.map((c) => [c.id, c.trigger, c.summary]),
      [
        ["ckpt-0001", "handoff", "one"],
        ["ckpt-0002", "verification_pass", "two"],
        ["ckpt-0003", "handoff", "three"],
      ],
    );
    assert.equal((await load(t.home, "c")).state.last_checkpoint, "ckpt-0003");
    const bad = await findCheckpoint(store.dir, "c", "ckpt-0042");
    assert.ok("error" in bad && bad.error.code === "unknown_checkpoint");
    assert.match(bad.error.message, /has 3 \(ckpt-0001 … ckpt-0003\); list them with: relay infty checkpoints c/);
    assert.equal(((await findCheckpoint(store.dir, "c", "2")) as { ok: { id: string } }).ok.id, "ckpt-0002");
  });

  test("fail, pass, deliver; restore to the checkpoint after the failure; resume ends in a verified deliverable", async () => {
    await using t = await setup();
    const first = await runFirstTimeline(t, "r");
    assert.equal(first.status, "complete");
    assert.deepEqual(
      first.captured.map((c) => c.trigger),
      ["handoff", "handoff", "handoff", "verification_pass", "handoff", "delivery"],
    );
    const target = afterFailure(first.captured);
    const store = await load(t.home, "r");
    // Every rollout file, by path: a Verifier that passed has had a fresh session since.
    const full = new Map(sessionFiles(t.home).map((f) => [f, readFileSync(f)]));
    const latest = rolloutsOf(store);

    const restored = await restoreRun(store, target.id);
    assert.ok("ok" in restored, JSON.stringify(restored));
    assert.deepEqual(folderFiles(first.runDir), target.files, "the four folders hold what they held at the checkpoint");
    assert.equal(readFileSync(path.join(first.runDir, "artifacts/answer.txt"), "utf8"), "41\n");
    const back = rolloutsOf(await load(t.home, "r"));
    assert.notEqual(
      back.get("verifier-1"),
      latest.get("verifier-1"),
      "the Verifier went back to the session it had at the checkpoint",
    );
    for (const [role, file] of back) {
      const cut = target.rollouts.get(role)!;
      assert.deepEqual(
        readFileSync(file),
        full.get(file)!.subarray(0, cut),
        `${role}'s rollout is cut to its size at ${target.id}`,
      );
      const side: string | undefined = restored.ok.rollouts.find((r) => r.role === role)!.side_file;
      if (full.get(file)!.length > cut)
        assert.deepEqual(readFileSync(side!), full.get(file)!.subarray(cut), `${role}'s cut-off rest is in ${side}`);
      else assert.equal(side, undefined, `nothing of the ${role}'s rollout was cut`);
    }
    assert.ok(
      restored.ok.rollouts.some((r) => r.role === "solver" && r.side_file?.endsWith(`.after-${target.id}.jsonl`)),
    );
    const st = (await load(t.home, "r")).state;
    assert.equal(st.status, "interrupted");
    assert.match(st.status_detail, /relay infty resume r/);
    assert.equal(st.deliverable, null);
    assert.equal(st.verified_at, null);
    assert.equal(st.inflight, null);
    assert.equal(st.last_checkpoint, target.id);
    assert.ok(st.pending?.type === "solver_message" && /"overall": "fail"/.test(st.pending.message));
    assert.ok(!existsSync(path.join(first.runDir, RESTORE_INTENT_FILE)));

    const sent = t.server.requests.length;
    enqueueSecondTimeline(t.server);
    const r = await runInfty({
      home: t.home,
      config: t.config,
      runId: "r",
      resume: true,
      report: () => {},
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.status, "complete", r.ok.detail);
    assert.equal(readFileSync(path.join(r.ok.deliverable!, "answer.txt"), "utf8"), "42\n");
    assert.equal(r.ok.summary, "42, second timeline");
    // The roles' conversations went on from the checkpoint: nothing of the first timeline's later turns.
    const before = Array.from({ length: sent }, (_, i) => inputText(t.server, i));
    assert.ok(
      before.some((x) => /echo 42 > artifacts\/answer.txt/.test(x)) &&
        before.some((x) => /\\"notes\\": \\"fixed\\"/.test(x)),
      "the patterns below find the first timeline's turns",
    );
    const solverAfter = inputText(t.server, sent);
    assert.match(solverAfter, /answer.txt says 41, not 42/);
    assert.doesNotMatch(solverAfter, /echo 42 > artifacts\/answer.txt/);
    const verifierAfter = inputText(t.server, sent + 2);
    assert.match(verifierAfter, /second timeline/);
    assert.doesNotMatch(verifierAfter, /\\"notes\\": \\"fixed\\"/);

    const claims = (await readClaimsIndex(first.runDir))!;
    assert.deepEqual(
      claims.claims.map((c) => [c.path, c.status, c.claim, c.rounds.map((x) => x.overall), c.artifacts]),
      [[CLAIM, "passed", "the answer is 42", ["fail", "pass"], ["artifacts/answer.txt"]]],
    );
    const artifacts = (await readArtifactsIndex(first.runDir))!;
    assert.deepEqual(
      artifacts.files.map((f) => [f.path, f.bytes, f.sha256, f.claims]),
      [["artifacts/answer.txt", 3, createHash("sha256").update("42\n").digest("hex"), [CLAIM]]],
    );
    const list = await listCheckpoints(first.runDir);
    assert.ok("ok" in list);
    assert.deepEqual(
      list.ok.slice(first.captured.length).map((c) => c.trigger),
      ["resume", "handoff", "verification_pass", "handoff", "delivery"],
      "the second timeline's checkpoints follow the first's",
    );
    // Resume marks where the second timeline starts: the restored step, the same files (the index is rewritten: its time).
    const [was, now] = await Promise.all(
      [target.id, list.ok[first.captured.length]!.id].map(async (id) => {
        const c = await findCheckpoint(first.runDir, "r", id);
        assert.ok("ok" in c);
        const read = await readCheckpoint(first.runDir, c.ok);
        assert.ok("ok" in read);
        return { handoff: read.ok.record.handoff, trees: [...read.ok.trees].filter(([d]) => d !== "index") };
      }),
    );
    assert.deepEqual(now, was);
  });

  test("a restore cut short after cutting one rollout is finished by resume", async () => {
    await using t = await setup();
    const first = await runFirstTimeline(t, "x");
    const target = afterFailure(first.captured);
    const store = await load(t.home, "x");
    const c = await findCheckpoint(store.dir, "x", target.id);
    assert.ok("ok" in c);
    const rec = await readCheckpoint(store.dir, c.ok);
    assert.ok("ok" in rec);
    // What restore writes first, then the first of its steps, then the "crash".
    const intent: RestoreIntent = {
      version: 1,
      checkpoint: c.ok.id,
      commit: c.ok.commit,
      started_at: new Date().toISOString(),
      rollouts: rec.ok.record.rollouts.map((r) => ({ ...r, side_file: `${r.path}.after-test.jsonl` })),
    };
    writeFileSync(path.join(store.dir, RESTORE_INTENT_FILE), JSON.stringify(intent));
    const solver = intent.rollouts.find((r) => r.role === "solver")!;
    const whole = readFileSync(solver.path);
    writeFileSync(solver.side_file, whole.subarray(solver.bytes));
    writeFileSync(solver.path, whole.subarray(0, solver.bytes));

    const events: string[] = [];
    enqueueSecondTimeline(t.server);
    const r = await runInfty({
      home: t.home,
      config: t.config,
      runId: "x",
      resume: true,
      report: (e) => e.type === "warning" && events.push(e.message),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.status, "complete", r.ok.detail);
    assert.ok(
      events.some((m) => m.includes(`finished the interrupted restore to ${target.id}`)),
      events.join("\n"),
    );
    assert.deepEqual(
      readFileSync(solver.side_file),
      whole.subarray(solver.bytes),
      "the rest written before the crash is kept once",
    );
    const verifier = intent.rollouts.find((x) => x.role === "verifier-1")!;
    assert.ok(existsSync(verifier.side_file), "the step the crash skipped was done on resume");
    assert.ok(!existsSync(path.join(store.dir, RESTORE_INTENT_FILE)));
    assert.equal(r.ok.summary, "42, second timeline");
  });
});

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { checkDeliverable } from "../../src/infty/deliverable.ts";
import { generateRunId, RunStore, validateRunId } from "../../src/infty/run-store.ts";
import { aggregate } from "../../src/infty/signals.ts";
import { REDACTED } from "../../src/util/redact.ts";

function tmp(): string {
  return mkdtempSync(path.join(os.tmpdir(), "relay-infty-"));
}

const init = { objective: "o", verifiers: 1, consensus: "all" as const, max_turns: 10, max_wall_ms: 60_000 };

describe("run store", () => {
  test("creates the layout and run.json; refuses to create a run twice", async () => {
    const home = tmp();
    try {
      const r = await RunStore.create(home, { run_id: "r1", ...init });
      assert.ok("ok" in r);
      assert.deepEqual(readdirSync(r.ok.dir).sort(), ["artifacts", "deliverable", "index", "memory", "run.json"]);
      const again = await RunStore.create(home, { run_id: "r1", ...init });
      assert.ok("error" in again && /already exists.*relay infty resume r1/.test(again.error.message));
      const loaded = await RunStore.load(home, "r1");
      assert.ok("ok" in loaded && loaded.ok.state.status === "running");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("a run store is owner-only (0700 folders, 0600 files, as rollouts are); an older, open one is tightened when loaded", {
    skip: process.platform === "win32" && "no POSIX modes",
  }, async () => {
    const home = tmp();
    const mode = (p: string) => statSync(p).mode & 0o777;
    try {
      const r = await RunStore.create(home, { run_id: "r-private", ...init });
      assert.ok("ok" in r);
      await r.ok.log({ type: "restored", checkpoint: "ckpt-0001", commit: "0".repeat(40), side_files: [] });
      assert.equal(mode(RunStore.runsRoot(home)), 0o700);
      assert.equal(mode(r.ok.dir), 0o700);
      assert.equal(mode(path.join(r.ok.dir, "run.json")), 0o600);
      assert.equal(mode(path.join(r.ok.dir, "events.jsonl")), 0o600);
      chmodSync(r.ok.dir, 0o755);
      chmodSync(RunStore.runsRoot(home), 0o755);
      assert.ok("ok" in (await RunStore.load(home, "r-private")));
      assert.equal(mode(r.ok.dir), 0o700);
      assert.equal(mode(RunStore.runsRoot(home)), 0o700);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("the event log keeps no secret a role or a person wrote, and keeps ids, paths and counts", async () => {
    const home = tmp();
    try {
      const r = await RunStore.create(home, { run_id: "r-secret", ...init });
      assert.ok("ok" in r);
      const key = "sk-proj-4fJ8xQ2mZ9tL0vB7nR3kW6yH1cD5";
      const commit = "9f1c2ab3d4e5f60718293a4b5c6d7e8f90a1b2c3";
      await r.ok.log({
        type: "role",
        role: "solver",
        event: { kind: "tool_call", name: "exec_command", text: `export OPENAI_API_KEY=${key} && make` },
      });
      await r.ok.log({
        type: "verdict",
        role: "verifier-1",
        verdict: "fail",
        reasons: [`the token ${key} is in the README`],
        claim_path: "memory/claims/c.json",
        final: false,
      });
      await r.ok.log({ type: "restored", checkpoint: "ckpt-0002", commit, side_files: [] });
      const log = readFileSync(path.join(r.ok.dir, "events.jsonl"), "utf8");
      assert.ok(!log.includes(key), log);
      assert.equal(log.split(REDACTED).length - 1, 2, "both texts redacted");
      assert.match(log, /"name":"exec_command"/);
      assert.ok(log.includes(commit), "a commit id stays as it is");
      assert.ok(log.includes("memory/claims/c.json"));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("a corrupt or foreign run.json is a clear error and nothing is touched", async () => {
    const home = tmp();
    try {
      const dir = path.join(home, "infty", "bad");
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, "run.json"), "{ half");
      const r = await RunStore.load(home, "bad");
      assert.ok("error" in r && r.error.code === "run_corrupt" && /not valid JSON/.test(r.error.message));
      assert.equal(readFileSync(path.join(dir, "run.json"), "utf8"), "{ half");
      writeFileSync(path.join(dir, "run.json"), JSON.stringify({ run_id: "bad", status: "exploded" }));
      const r2 = await RunStore.load(home, "bad");
      assert.ok("error" in r2 && /does not match the run format/.test(r2.error.message));
      const listed = await RunStore.list(home);
      assert.equal(listed.runs.length, 0);
      assert.equal(listed.warnings.length, 1);
      const missing = await RunStore.load(home, "nope");
      assert.ok("error" in missing && /relay infty list/.test(missing.error.message));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("run ids are validated; generated ids are valid", () => {
    for (const bad of ["", ".hidden", "a/b", "x.", "sp ace"]) assert.ok("error" in validateRunId(bad), bad);
    for (const good of ["run-1", "a.b_c-9"]) assert.ok("ok" in validateRunId(good), good);
    assert.ok("ok" in validateRunId(generateRunId()));
  });

  test("notes are append-only with increasing ids; paths cannot escape", async () => {
    const home = tmp();
    try {
      const r = await RunStore.create(home, { run_id: "n", ...init });
      assert.ok("ok" in r);
      const s = r.ok;
      const a = await s.note("solver", "k", "first");
      const b = await s.note("director", "k", "second");
      assert.deepEqual([a.id, b.id], ["note-0001", "note-0002"]);
      const lines = readFileSync(path.join(s.dir, "memory", "notes.jsonl"), "utf8")
        .trim()
        .split("\n");
      assert.equal(lines.length, 2);
      const esc = await s.resolveInside("../../etc");
      assert.ok("error" in esc && esc.error.code === "escapes_run_store");
      const reloaded = await RunStore.load(home, "n");
      assert.ok("ok" in reloaded && reloaded.ok.state.next_note === 3, "the note counter survives a reload");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("signals", () => {
  test("consensus: all, majority, and no verifiers", () => {
    const v = (verdict: "pass" | "fail") => ({ role: "v", verdict, reasons: [], suggestions: [] });
    assert.equal(aggregate([v("pass"), v("pass"), v("fail")], "majority"), "pass");
    assert.equal(aggregate([v("pass"), v("pass"), v("fail")], "all"), "fail");
    assert.equal(aggregate([v("pass"), v("fail")], "majority"), "fail", "a tie is not a majority");
    assert.equal(aggregate([], "all"), "pass");
  });
});

describe("deliverable check", () => {
  function deliverable(readme: string, files: Record<string, string>): string {
    const dir = tmp();
    for (const [f, c] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      writeFileSync(path.join(dir, f), c);
    }
    writeFileSync(path.join(dir, "README.md"), readme);
    return dir;
  }
  const readme = (manifest: string) =>
    `# X\n\n## Manifest\n${manifest}\n## How to verify\nrun it\n## Limitations\nnone\n`;

  test("a manifest that matches the files passes", async () => {
    const dir = deliverable(readme("- a.txt (3 bytes)\n- sub/b.txt (2 bytes)\n"), {
      "a.txt": "abc",
      "sub/b.txt": "hi",
    });
    const r = await checkDeliverable(dir);
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.totalBytes, 5);
  });

  test("wrong sizes, missing and unlisted files, and missing sections are reported", async () => {
    const dir = deliverable(readme("- a.txt (4 bytes)\n- gone.txt (1 bytes)\n"), { "a.txt": "abc", "extra.txt": "e" });
    const r = await checkDeliverable(dir);
    assert.ok("error" in r);
    assert.match(r.error.message, /a\.txt is 3 bytes, the manifest says 4/);
    assert.match(r.error.message, /gone\.txt is listed but missing/);
    assert.match(r.error.message, /extra\.txt is in the deliverable but not in the manifest/);
    const noSections = await checkDeliverable(deliverable("# only a title\n", {}));
    assert.ok(
      "error" in noSections &&
        /lacks the sections: ## Manifest, ## How to verify, ## Limitations/.test(noSections.error.message),
    );
  });
});

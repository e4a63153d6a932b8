import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { ArtifactsIndexSchema, ClaimsIndexSchema, ROUNDS_FILE } from "../../src/infty/index-format.ts";
import { readRounds, recordRound, writeIndexes } from "../../src/infty/index-files.ts";
import { RunStore } from "../../src/infty/run-store.ts";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

async function store(home: string): Promise<RunStore> {
  const r = await RunStore.create(home, { run_id: "i", objective: "o", verifiers: 1, consensus: "all", max_turns: 5, max_wall_ms: 60_000 });
  assert.ok("ok" in r);
  return r.ok;
}

describe("infty index files", () => {
  test("claims with their rounds and status; artifacts with sha256 and the claims whose evidence names them", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-index-"));
    try {
      const s = await store(home);
      const put = (rel: string, text: string) => (mkdirSync(path.dirname(path.join(s.dir, rel)), { recursive: true }), writeFileSync(path.join(s.dir, rel), text));
      put("artifacts/lib/a.ts", "a");
      put("artifacts/lib/b.ts", "bb");
      put("artifacts/notes.md", "n");
      put("memory/claims/lib.json", JSON.stringify({ claim: "lib works", evidence: ["artifacts/lib/", { run: "node artifacts/notes.md." }] }));
      put("memory/claims/raw.txt", "plain words about artifacts/lib/a.ts");
      await recordRound(s, { claim_path: "memory/claims/lib.json", overall: "fail", verdicts: [{ role: "verifier-1", verdict: "fail", reasons: ["r"], suggestions: [] }] });
      await recordRound(s, { claim_path: "memory/claims/lib.json", overall: "fail", verdicts: [] });
      assert.equal((await readRounds(s.dir)).length, 1, "the same round (same step, same claim) is recorded once");
      await s.update({ handoffs: 1 });
      await recordRound(s, { claim_path: "memory/claims/lib.json", overall: "pass", verdicts: [] });
      await recordRound(s, { claim_path: "memory/claims/gone.json", overall: "fail", verdicts: [], problem: "missing" });
      await s.update({ handoffs: 2, pending: { type: "verification", claim_path: "memory/claims/raw.txt", notes: null, final: false, verdicts: [] } });
      await writeIndexes(s);

      const claims = ClaimsIndexSchema.parse(JSON.parse(readFileSync(path.join(s.dir, "index/claims.json"), "utf8")));
      assert.deepEqual(
        claims.claims.map((c) => [c.path, c.status, c.claim, c.readable, c.rounds.map((r) => r.overall), c.artifacts]),
        [
          ["memory/claims/lib.json", "passed", "lib works", true, ["fail", "pass"], ["artifacts/lib/a.ts", "artifacts/lib/b.ts", "artifacts/notes.md"]],
          ["memory/claims/gone.json", "failed", null, false, ["fail"], []],
          ["memory/claims/raw.txt", "pending", "plain words about artifacts/lib/a.ts", true, [], ["artifacts/lib/a.ts"]],
        ],
      );
      const artifacts = ArtifactsIndexSchema.parse(JSON.parse(readFileSync(path.join(s.dir, "index/artifacts.json"), "utf8")));
      assert.deepEqual(artifacts.files.map((f) => [f.path, f.bytes, f.sha256, f.claims]), [
        ["artifacts/lib/a.ts", 1, sha("a"), ["memory/claims/lib.json", "memory/claims/raw.txt"]],
        ["artifacts/lib/b.ts", 2, sha("bb"), ["memory/claims/lib.json"]],
        ["artifacts/notes.md", 1, sha("n"), ["memory/claims/lib.json"]],
      ]);
      assert.ok(readFileSync(path.join(s.dir, ROUNDS_FILE), "utf8").endsWith("\n"));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("an artifact whose size and mtime are unchanged since the last index is not hashed again; a changed one is", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-index-"));
    try {
      const s = await store(home);
      const file = path.join(s.dir, "artifacts/x.txt");
      writeFileSync(file, "one");
      // Old enough not to be "racy" next to the index's own time.
      const old = new Date(Date.now() - 60_000);
      utimesSync(file, old, old);
      await writeIndexes(s);
      const index = path.join(s.dir, "index/artifacts.json");
      // A hash that only the cache can have produced: the file itself says "one".
      const doctored = JSON.parse(readFileSync(index, "utf8")) as { files: Array<{ sha256: string }> };
      doctored.files[0]!.sha256 = "0".repeat(64);
      writeFileSync(index, JSON.stringify(doctored));
      await writeIndexes(s);
      assert.equal(ArtifactsIndexSchema.parse(JSON.parse(readFileSync(index, "utf8"))).files[0]!.sha256, "0".repeat(64));
      writeFileSync(file, "two");
      utimesSync(file, old, new Date(statSync(file).mtimeMs - 30_000));
      await writeIndexes(s);
      assert.equal(ArtifactsIndexSchema.parse(JSON.parse(readFileSync(index, "utf8"))).files[0]!.sha256, sha("two"));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

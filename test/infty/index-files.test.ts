import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import {
  forgetIndex,
  readArtifactsIndex,
  readClaimsIndex,
  readRounds,
  recordRound,
  writeIndexes,
} from "../../src/infty/index-files.ts";
import { ROUNDS_FILE } from "../../src/infty/index-format.ts";
import { RunStore } from "../../src/infty/run-store.ts";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

async function store(home: string): Promise<RunStore> {
  const r = await RunStore.create(home, {
    run_id: "i",
    objective: "o",
    verifiers: 1,
    consensus: "all",
    max_turns: 5,
    max_wall_ms: 60_000,
  });
  assert.ok("ok" in r);
  return r.ok;
}

describe("infty index files", () => {
  test("claims with their rounds and status; artifacts with sha256 and the claims whose evidence names them", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-index-"));
    try {
      const s = await store(home);
      const put = (rel: string, text: string) => (
        mkdirSync(path.dirname(path.join(s.dir, rel)), { recursive: true }), writeFileSync(path.join(s.dir, rel), text)
      );
      put("artifacts/lib/a.ts", "a");
      put("artifacts/lib/b.ts", "bb");
      put("artifacts/notes.md", "n");
      put(
        "memory/claims/lib.json",
        JSON.stringify({ claim: "lib works", evidence: ["artifacts/lib/", { run: "node artifacts/notes.md." }] }),
      );
      put("memory/claims/raw.txt", "plain words about artifacts/lib/a.ts");
      await recordRound(s, {
        claim_path: "memory/claims/lib.json",
        overall: "fail",
        verdicts: [{ role: "verifier-1", verdict: "fail", reasons: ["r"], suggestions: [] }],
      });
      await recordRound(s, { claim_path: "memory/claims/lib.json", overall: "fail", verdicts: [] });
      assert.equal((await readRounds(s.dir)).length, 1, "the same round (same step, same claim) is recorded once");
      await s.update({ handoffs: 1 });
      await recordRound(s, { claim_path: "memory/claims/lib.json", overall: "pass", verdicts: [] });
      await recordRound(s, {
        claim_path: "memory/claims/gone.json",
        overall: "fail",
        verdicts: [],
        problem: "missing",
      });
      await s.update({
        handoffs: 2,
        pending: { type: "verification", claim_path: "memory/claims/raw.txt", notes: null, final: false, verdicts: [] },
      });
      await writeIndexes(s);

      const claims = (await readClaimsIndex(s.dir))!;
      assert.deepEqual(
        claims.claims.map((c) => [c.path, c.status, c.claim, c.readable, c.rounds.map((r) => r.overall), c.artifacts]),
        [
          [
            "memory/claims/lib.json",
            "passed",
            "lib works",
            true,
            ["fail", "pass"],
            ["artifacts/lib/a.ts", "artifacts/lib/b.ts", "artifacts/notes.md"],
          ],
          ["memory/claims/gone.json", "failed", null, false, ["fail"], []],
          [
            "memory/claims/raw.txt",
            "pending",
            "plain words about artifacts/lib/a.ts",
            true,
            [],
            ["artifacts/lib/a.ts"],
          ],
        ],
      );
      const artifacts = (await readArtifactsIndex(s.dir))!;
      assert.deepEqual(
        artifacts.files.map((f) => [f.path, f.bytes, f.sha256, f.claims]),
        [
          ["artifacts/lib/a.ts", 1, sha("a"), ["memory/claims/lib.json", "memory/claims/raw.txt"]],
          ["artifacts/lib/b.ts", 2, sha("bb"), ["memory/claims/lib.json"]],
          ["artifacts/notes.md", 1, sha("n"), ["memory/claims/lib.json"]],
        ],
      );
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
      const page = path.join(s.dir, "index/artifacts/0001.json");
      // A hash that only the last index can have given: the file itself says "one".
      writeFileSync(page, readFileSync(page, "utf8").replace(sha("one"), "0".repeat(64)));
      forgetIndex(s);
      await writeIndexes(s);
      assert.equal((await readArtifactsIndex(s.dir))!.files[0]!.sha256, "0".repeat(64));
      writeFileSync(file, "two");
      utimesSync(file, old, new Date(statSync(file).mtimeMs - 30_000));
      await writeIndexes(s);
      assert.equal((await readArtifactsIndex(s.dir))!.files[0]!.sha256, sha("two"));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("infty index pages", () => {
  const put = (s: RunStore, rel: string, text: string) => (
    mkdirSync(path.dirname(path.join(s.dir, rel)), { recursive: true }), writeFileSync(path.join(s.dir, rel), text)
  );
  const manifest = (s: RunStore, name: string) =>
    JSON.parse(readFileSync(path.join(s.dir, `index/${name}.json`), "utf8")) as {
      version: number;
      entries: number;
      pages: Array<{ file: string; entries: number; first: string; last: string }>;
    };
  const changes = (...paths: string[]) => ({ all: false as const, paths: new Set(paths) });

  test("a large index is pages in path order; a new artifact rewrites its page and the manifest, nothing else; an emptied page is removed", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-pages-"));
    try {
      const s = await store(home);
      for (let i = 0; i < 1200; i++) put(s, `artifacts/f-${String(i).padStart(4, "0")}.txt`, `file ${i}`);
      put(s, "memory/claims/c.json", JSON.stringify({ claim: "one file", evidence: ["artifacts/f-0700.txt"] }));
      await recordRound(s, { claim_path: "memory/claims/c.json", overall: "pass", verdicts: [] });
      await writeIndexes(s);
      const m = manifest(s, "artifacts");
      assert.equal(m.version, 2);
      assert.equal(m.entries, 1200);
      assert.ok(
        m.pages.length >= 3 && m.pages.every((p) => p.entries <= 512),
        JSON.stringify(m.pages.map((p) => p.entries)),
      );
      for (let i = 1; i < m.pages.length; i++)
        assert.ok(m.pages[i - 1]!.last < m.pages[i]!.first, "pages in path order");
      const whole = (await readArtifactsIndex(s.dir))!;
      assert.equal(whole.files.length, 1200);
      assert.deepEqual(whole.files.find((f) => f.path === "artifacts/f-0700.txt")!.claims, ["memory/claims/c.json"]);

      assert.deepEqual(await writeIndexes(s, changes()), [], "nothing changed: nothing written");
      put(s, "artifacts/f-0500-new.txt", "new");
      const written = await writeIndexes(s, changes("artifacts/f-0500-new.txt"));
      const holder = manifest(s, "artifacts").pages.find(
        (p) => p.first <= "artifacts/f-0500-new.txt" && "artifacts/f-0500-new.txt" <= p.last,
      )!;
      assert.deepEqual(written.sort(), [holder.file, "index/artifacts.json"].sort());

      const first = manifest(s, "artifacts").pages[0]!;
      const gone = whole.files.filter((f) => f.path >= first.first && f.path <= first.last).map((f) => f.path);
      for (const f of gone) rmSync(path.join(s.dir, f));
      const removed = await writeIndexes(s, changes(...gone));
      assert.ok(removed.includes(first.file), `${first.file} removed: ${removed.join(" ")}`);
      assert.equal(existsSync(path.join(s.dir, first.file)), false);
      assert.equal((await readArtifactsIndex(s.dir))!.files.length, 1201 - gone.length);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("claims are pages in the order first sent: a new round rewrites the claim's page and the pages of the artifacts its evidence names", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-pages-"));
    try {
      const s = await store(home);
      for (let i = 0; i < 300; i++) {
        put(s, `artifacts/a-${i}.txt`, `a ${i}`);
        put(s, `memory/claims/c-${i}.json`, JSON.stringify({ claim: `c ${i}`, evidence: [`artifacts/a-${i}.txt`] }));
        await s.update({ handoffs: i });
        await recordRound(s, { claim_path: `memory/claims/c-${i}.json`, overall: "fail", verdicts: [] });
      }
      await writeIndexes(s);
      const claims = manifest(s, "claims");
      assert.deepEqual(
        claims.pages.map((p) => [p.file, p.entries, p.first]),
        [
          ["index/claims/0001.json", 256, "memory/claims/c-0.json"],
          ["index/claims/0002.json", 44, "memory/claims/c-256.json"],
        ],
      );
      await s.update({ handoffs: 400 });
      await recordRound(s, { claim_path: "memory/claims/c-3.json", overall: "pass", verdicts: [] });
      // The claim's text changes too: its file is named by the change feed.
      put(
        s,
        "memory/claims/c-3.json",
        JSON.stringify({ claim: "c 3, again", evidence: ["artifacts/a-3.txt", "artifacts/a-299.txt"] }),
      );
      const written = await writeIndexes(s, changes("memory/claims/c-3.json"));
      const artifactPages = manifest(s, "artifacts")
        .pages.filter((p) => ["artifacts/a-3.txt", "artifacts/a-299.txt"].some((a) => p.first <= a && a <= p.last))
        .map((p) => p.file);
      assert.deepEqual(written.sort(), ["index/claims/0001.json", ...artifactPages].sort());
      const c3 = (await readClaimsIndex(s.dir))!.claims.find((c) => c.path === "memory/claims/c-3.json")!;
      assert.deepEqual(
        [c3.claim, c3.status, c3.rounds.map((r) => r.overall), c3.artifacts],
        ["c 3, again", "passed", ["fail", "pass"], ["artifacts/a-299.txt", "artifacts/a-3.txt"]],
      );
      const a299 = (await readArtifactsIndex(s.dir))!.files.find((f) => f.path === "artifacts/a-299.txt")!;
      assert.deepEqual(a299.claims, ["memory/claims/c-3.json", "memory/claims/c-299.json"], "in the order first sent");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("an index that does not read back (a torn page, a stray file, an index from before pages) is made again whole", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-pages-"));
    try {
      const s = await store(home);
      for (let i = 0; i < 600; i++) put(s, `artifacts/f-${String(i).padStart(3, "0")}.txt`, `file ${i}`);
      await writeIndexes(s);
      const pages = manifest(s, "artifacts").pages;
      writeFileSync(path.join(s.dir, pages[1]!.file), '{"version": 2, "files": [');
      writeFileSync(path.join(s.dir, "index/artifacts/9999.json"), "stray");
      forgetIndex(s);
      const written = await writeIndexes(s);
      assert.ok(written.includes("index/artifacts/9999.json"), written.join(" "));
      assert.equal(existsSync(path.join(s.dir, "index/artifacts/9999.json")), false);
      assert.equal((await readArtifactsIndex(s.dir))!.files.length, 600);

      // A run from before pages: index/artifacts.json held every file; its hashes are still used.
      const whole = (await readArtifactsIndex(s.dir))!;
      rmSync(path.join(s.dir, "index/artifacts"), { recursive: true });
      const old = new Date(Date.now() - 60_000);
      for (const f of whole.files) utimesSync(path.join(s.dir, f.path), old, old);
      const v1 = {
        ...whole,
        version: 1,
        files: whole.files.map((f) => ({
          ...f,
          modified_at: old.toISOString(),
          sha256: f.path.endsWith("000.txt") ? "0".repeat(64) : f.sha256,
        })),
      };
      writeFileSync(path.join(s.dir, "index/artifacts.json"), JSON.stringify(v1));
      forgetIndex(s);
      await writeIndexes(s);
      const again = (await readArtifactsIndex(s.dir))!;
      assert.equal(again.version, 2);
      assert.equal(again.files.length, 600);
      assert.equal(again.files[0]!.sha256, "0".repeat(64), "the old index's hash of an unchanged file is kept");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/**
 * Packing the checkpoints' repository: every object of every checkpoint still reads the same
 * (through isomorphic-git, as restore reads), git itself finds the packs and the repository
 * valid, a changed folder or an appended file is stored as a small delta, nothing is dropped
 * (a loose object no checkpoint holds yet is packed too), and packs are merged when they pile up.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { CHECKPOINT_REF } from "../../src/infty/checkpoint-format.ts";
import { MERGE_PACKS, packIfDue } from "../../src/infty/checkpoint-pack.ts";
import { delta, looseObjects, packs } from "../../src/infty/git-pack.ts";
import { type Git, gitFs, loadGit } from "../../src/infty/git-store.ts";

const AUTHOR = { name: "t", email: "t@t", timestamp: 0, timezoneOffset: 0 };

/** A checkpoint-like history: a folder gaining a file each commit, a log growing by a line. */
async function history(
  git: Git,
  gitdir: string,
  commits: number,
  from = 0,
): Promise<Array<{ commit: string; files: Map<string, string> }>> {
  const out: Array<{ commit: string; files: Map<string, string> }> = [];
  let parent = await git.resolveRef({ fs: gitFs, gitdir, ref: CHECKPOINT_REF }).catch(() => undefined);
  const log: string[] = [];
  for (let i = 0; i < from; i++) log.push(`line ${i} ${"x".repeat(80)}`);
  for (let c = from; c < from + commits; c++) {
    log.push(`line ${c} ${"x".repeat(80)}`);
    const files = new Map<string, string>();
    for (let a = 0; a <= c; a++)
      files.set(`a-${String(a).padStart(4, "0")}.txt`, `artifact ${a}\n${"y".repeat(500)}\n`);
    const entries = [];
    for (const [name, text] of files)
      entries.push({
        mode: "100644",
        path: name,
        oid: await git.writeBlob({ fs: gitFs, gitdir, blob: Buffer.from(text) }),
        type: "blob" as const,
      });
    const artifacts = await git.writeTree({ fs: gitFs, gitdir, tree: entries });
    const logOid = await git.writeBlob({ fs: gitFs, gitdir, blob: Buffer.from(log.join("\n") + "\n") });
    const memory = await git.writeTree({
      fs: gitFs,
      gitdir,
      tree: [{ mode: "100644", path: "notes.jsonl", oid: logOid, type: "blob" }],
    });
    const root = await git.writeTree({
      fs: gitFs,
      gitdir,
      tree: [
        { mode: "040000", path: "artifacts", oid: artifacts, type: "tree" },
        { mode: "040000", path: "memory", oid: memory, type: "tree" },
      ],
    });
    parent = await git.writeCommit({
      fs: gitFs,
      gitdir,
      commit: { message: `c${c}\n`, tree: root, parent: parent ? [parent] : [], author: AUTHOR, committer: AUTHOR },
    });
    await git.writeRef({ fs: gitFs, gitdir, ref: CHECKPOINT_REF, value: parent, force: true });
    files.set("notes.jsonl", log.join("\n") + "\n");
    out.push({ commit: parent, files });
  }
  return out;
}

async function readsBack(
  git: Git,
  gitdir: string,
  h: Array<{ commit: string; files: Map<string, string> }>,
): Promise<void> {
  const cache = {};
  for (const { commit, files } of h) {
    for (const [name, text] of files) {
      const filepath = name === "notes.jsonl" ? `memory/${name}` : `artifacts/${name}`;
      const { blob } = await git.readBlob({ fs: gitFs, gitdir, oid: commit, filepath, cache });
      assert.equal(Buffer.from(blob).toString(), text, `${filepath} at ${commit}`);
    }
  }
}

/** Bytes on disk (blocks): a loose object takes a block of its own however small it is. */
const bytesOf = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (n, e) => n + (e.isDirectory() ? bytesOf(path.join(dir, e.name)) : statSync(path.join(dir, e.name)).blocks * 512),
    0,
  );

describe("packing the checkpoints' repository", () => {
  test("a delta copies what the target shares with the base and inserts the rest; git applies it", () => {
    const base = Buffer.from("hello, world! ".repeat(3));
    const target = Buffer.from(`hello, big world! ${"hello, world! ".repeat(2)}`);
    const d = delta(base, target);
    // sizes 42 and 46 first; a copy instruction (high bit set) for the shared end
    assert.deepEqual([...d.subarray(0, 2)], [42, 46]);
    assert.ok(
      d.some((b) => b & 0x80),
      "something is copied",
    );
    assert.deepEqual(applyDelta(base, d), target);
    // A list with an entry inserted in its middle and a changed stamp at its top: a few small instructions.
    const entries = (n: number, extra: number[] = []) =>
      [...Array.from({ length: n }, (_, i) => i), ...extra]
        .sort()
        .map((i) => `{"path": "artifacts/a-${i}.txt", "bytes": ${100 + i}}`);
    const before = Buffer.from(`{"at": "10:00:00", "files": [\n${entries(300).join(",\n")}\n]}\n`);
    const after = Buffer.from(`{"at": "10:00:07", "files": [\n${entries(300, [1000]).join(",\n")}\n]}\n`);
    assert.ok(
      delta(before, after).length < 120,
      `${delta(before, after).length} bytes for a ${after.length}-byte list`,
    );
    assert.deepEqual(applyDelta(before, delta(before, after)), after);
    assert.deepEqual(applyDelta(after, delta(after, before)), before);
    const unrelated = Buffer.from("x".repeat(10) + "unrelated content entirely");
    assert.deepEqual(applyDelta(before, delta(before, unrelated)), unrelated);
  });

  test("every object reads back the same, git finds the pack valid, deltas keep it small; nothing is dropped", async () => {
    const gitdir = mkdtempSync(path.join(os.tmpdir(), "relay-pack-"));
    try {
      const git = await loadGit();
      await git.init({ fs: gitFs, gitdir, bare: true, defaultBranch: "checkpoints" });
      const h = await history(git, gitdir, 40);
      const stray = await git.writeBlob({ fs: gitFs, gitdir, blob: Buffer.from("hashed, in no checkpoint yet") });
      const loose = await looseObjects(gitdir);
      const looseBytes = bytesOf(path.join(gitdir, "objects"));
      const r = await packIfDue(git, gitdir, true);
      assert.deepEqual(r, { objects: loose.length, merged: false });
      assert.deepEqual(await looseObjects(gitdir), []);
      await readsBack(git, gitdir, h);
      assert.equal(
        Buffer.from((await git.readBlob({ fs: gitFs, gitdir, oid: stray })).blob).toString(),
        "hashed, in no checkpoint yet",
      );
      execFileSync("git", ["--git-dir", gitdir, "fsck", "--full", "--strict", "--no-dangling"], { stdio: "pipe" });
      const verify = execFileSync(
        "git",
        ["verify-pack", "-v", path.join(gitdir, "objects", "pack", (await packs(gitdir))[0]!)],
        { encoding: "utf8" },
      );
      assert.match(verify, /chain length = \d+: \d+ objects?/, "some objects are deltas");
      const packedBytes = bytesOf(path.join(gitdir, "objects"));
      assert.ok(packedBytes * 5 < looseBytes, `packed ${packedBytes} bytes vs ${looseBytes} loose`);
    } finally {
      rmSync(gitdir, { recursive: true, force: true });
    }
  });

  test("packs past MERGE_PACKS are merged into one; every checkpoint still reads back", async () => {
    const gitdir = mkdtempSync(path.join(os.tmpdir(), "relay-pack-"));
    try {
      const git = await loadGit();
      await git.init({ fs: gitFs, gitdir, bare: true, defaultBranch: "checkpoints" });
      const all = [];
      const stray = await git.writeBlob({ fs: gitFs, gitdir, blob: Buffer.from("in no checkpoint") });
      for (let p = 0; p <= MERGE_PACKS; p++) {
        all.push(...(await history(git, gitdir, 3, p * 3)));
        const r = await packIfDue(git, gitdir, true);
        assert.equal(r?.merged, p === MERGE_PACKS, `pack ${p}`);
        assert.equal((await packs(gitdir)).length, p === MERGE_PACKS ? 1 : p + 1);
      }
      assert.equal((await packs(gitdir)).length, 1);
      assert.deepEqual(await looseObjects(gitdir), []);
      await readsBack(git, gitdir, all);
      assert.equal(
        Buffer.from((await git.readBlob({ fs: gitFs, gitdir, oid: stray })).blob).toString(),
        "in no checkpoint",
      );
      // The merged pack's newest objects are deltas of objects that were packed before.
      const verify = execFileSync(
        "git",
        ["verify-pack", "-v", path.join(gitdir, "objects", "pack", (await packs(gitdir))[0]!)],
        { encoding: "utf8" },
      );
      const notes = all.at(-1)!.commit;
      const newestLog = execFileSync("git", ["--git-dir", gitdir, "rev-parse", `${notes}:memory/notes.jsonl`], {
        encoding: "utf8",
      }).trim();
      assert.match(
        verify,
        new RegExp(`^${newestLog} blob +\\d+ \\d+ \\d+ \\d+ [0-9a-f]{40}$`, "m"),
        "the newest log is a delta",
      );
      execFileSync("git", ["--git-dir", gitdir, "fsck", "--full", "--strict", "--no-dangling"], { stdio: "pipe" });
    } finally {
      rmSync(gitdir, { recursive: true, force: true });
    }
  });
});

/** git's delta applied (the reader's side, written out here to check ours against the format). */
function applyDelta(base: Buffer, d: Buffer): Buffer {
  let i = 0;
  const size = () => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      const b = d[i++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return n;
    }
  };
  assert.equal(size(), base.length);
  const out: Buffer[] = [];
  const want = size();
  while (i < d.length) {
    const op = d[i++]!;
    if (op & 0x80) {
      let offset = 0;
      let len = 0;
      for (let k = 0; k < 4; k++) if (op & (1 << k)) offset += d[i++]! * 256 ** k;
      for (let k = 0; k < 3; k++) if (op & (0x10 << k)) len += d[i++]! * 256 ** k;
      out.push(base.subarray(offset, offset + (len || 0x10000)));
    } else {
      out.push(d.subarray(i, i + op));
      i += op;
    }
  }
  const result = Buffer.concat(out);
  assert.equal(result.length, want);
  return result;
}

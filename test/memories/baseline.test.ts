/**
 * The memory folder's baseline survives any kill and any damage: a reset builds the new
 * repository beside the old and swaps it in, prepareWorkspace puts back one a kill left aside,
 * and a baseline that does not read (HEAD, commit, tree, blobs) is made again from the files.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { baselineProblem, prepareWorkspace, resetBaseline, workspaceDiff } from "../../src/memories/workspace.ts";
import { findOnPath } from "../../src/util/which.ts";
import { HOUR, OFFLINE, relay, sqliteSkip, tempHome, writeRollout } from "./support.ts";

const hasGit = Boolean(findOnPath("git", process.env.PATH));

/** A memory folder with two files and a baseline of them; its HEAD commit. */
async function folderWithBaseline(root: string): Promise<string> {
  mkdirSync(path.join(root, "rollout_summaries"), { recursive: true });
  writeFileSync(path.join(root, "MEMORY.md"), "# Memory\n- the build uses make\n");
  writeFileSync(path.join(root, "rollout_summaries", "a.md"), "# a\n");
  const r = await resetBaseline(root);
  assert.ok("ok" in r, JSON.stringify(r));
  return r.ok;
}

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

/** The folder's repository is whole: ours reads it, and so does git's fsck where git is installed. */
async function assertSound(root: string): Promise<void> {
  assert.equal(await baselineProblem(root), undefined);
  assert.deepEqual(
    readdirSync(root).filter((n) => n.startsWith(".git.")),
    [],
    "no staging folder is left",
  );
  if (hasGit) {
    const fsck = spawnSync("git", ["-C", root, "fsck", "--strict"], { encoding: "utf8" });
    assert.equal(fsck.status, 0, fsck.stderr);
  }
}

describe("memory baseline: damage", () => {
  const damages: Array<[string, (root: string, head: string) => void, RegExp]> = [
    [
      "HEAD names a commit that is not there",
      (root) =>
        writeFileSync(path.join(root, ".git", "refs", "heads", "main"), "0123456789abcdef0123456789abcdef01234567\n"),
      /HEAD names no commit|cannot be read/,
    ],
    [
      "every object file is empty",
      (root) => allFiles(path.join(root, ".git", "objects")).forEach((f) => truncateSync(f, 0)),
      /cannot be read/,
    ],
    [
      "a repository with no commit",
      (root) => {
        rmSync(path.join(root, ".git"), { recursive: true });
        mkdirSync(path.join(root, ".git", "objects"), { recursive: true });
        mkdirSync(path.join(root, ".git", "refs", "heads"), { recursive: true });
        writeFileSync(path.join(root, ".git", "HEAD"), "ref: refs/heads/main\n");
      },
      /HEAD names no commit/,
    ],
    [
      "a blob of the tree is missing",
      (root, head) => {
        const objects = allFiles(path.join(root, ".git", "objects")).filter((f) => !f.includes(head.slice(2)));
        rmSync(objects[0]!);
      },
      /cannot be read/,
    ],
    [
      ".git is a file",
      (root) => {
        rmSync(path.join(root, ".git"), { recursive: true });
        writeFileSync(path.join(root, ".git"), "gitdir: /nowhere\n");
      },
      /not a folder/,
    ],
  ];
  for (const [name, damage, why] of damages) {
    test(`${name}: made again from the folder's files, and said why once`, async () => {
      await using h = tempHome();
      const head = await folderWithBaseline(h.memories);
      damage(h.memories, head);
      assert.ok((await baselineProblem(h.memories)) !== undefined, "the damage is seen");
      const prep = await prepareWorkspace(h.memories);
      assert.ok("ok" in prep, JSON.stringify(prep));
      assert.match(prep.ok.rebuilt ?? "", why);
      await assertSound(h.memories);
      const diff = await workspaceDiff(h.memories);
      assert.ok("ok" in diff && diff.ok.changes.length === 0, "the files are the new baseline");
      const again = await prepareWorkspace(h.memories);
      assert.deepEqual(again, { ok: {} }, "said once: the next prepare finds nothing wrong");
    });
  }

  test("a reset killed between its renames (no .git, the old one aside) gets the old baseline back as it was", async () => {
    await using h = tempHome();
    const head = await folderWithBaseline(h.memories);
    renameSync(path.join(h.memories, ".git"), path.join(h.memories, ".git.old-123-456"));
    mkdirSync(path.join(h.memories, ".git.new-123-457", "objects"), { recursive: true });
    const prep = await prepareWorkspace(h.memories);
    assert.deepEqual(prep, { ok: {} });
    const again = spawnSync("git", ["-C", h.memories, "rev-parse", "HEAD"], { encoding: "utf8" });
    if (hasGit) assert.equal(again.stdout.trim(), head, "the same commit");
    await assertSound(h.memories);
  });

  test("a fresh folder gets its first baseline without a notice", async () => {
    await using h = tempHome();
    const prep = await prepareWorkspace(h.memories);
    assert.deepEqual(prep, { ok: {} });
    await assertSound(h.memories);
  });
});

/** Every place RELAY_TEST_CRASH_AT can stop phase 2 of a consolidation that has work to do. */
const CRASH_POINTS = [
  "phase2:synced",
  "phase2:diff-written",
  "phase2:consolidated",
  "baseline:redacted",
  "baseline:added",
  "baseline:committed",
  "baseline:moved-old",
  "baseline:moved-new",
];

describe("memory baseline: SIGKILL at every step of phase 2", { skip: sqliteSkip }, () => {
  for (const point of CRASH_POINTS) {
    test(`killed at ${point}: a plain consolidate then succeeds, with a sound baseline`, async () => {
      await using h = tempHome();
      writeRollout(h.home, { mtimeMs: Date.now() - 8 * HOUR, user: ["set up the CI pipeline"] });
      const first = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
      assert.equal(first.code, 0, first.stderr);
      writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["make the release script sign tags"] });
      const killed = await relay(h.home, ["memories", "consolidate", ...OFFLINE], { RELAY_TEST_CRASH_AT: point });
      assert.equal(killed.code, null, `the run reached ${point} and was killed: ${killed.stdout}${killed.stderr}`);
      const rerun = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
      assert.equal(rerun.code, 0, rerun.stderr);
      const report = JSON.parse(rerun.stdout) as { phase2: { status: string } };
      assert.match(report.phase2.status, /^succeeded/);
      await assertSound(h.memories);
      assert.ok(!existsSync(path.join(h.memories, "phase2_workspace_diff.md")), "no diff file is left");
      assert.match(readFileSync(path.join(h.memories, "MEMORY.md"), "utf8"), /./);
    });
  }

  test("a damaged baseline is said once on the summary line, and the run goes on", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 8 * HOUR, user: ["set up the CI pipeline"] });
    assert.equal((await relay(h.home, ["memories", "consolidate", ...OFFLINE])).code, 0);
    allFiles(path.join(h.memories, ".git", "objects")).forEach((f) => truncateSync(f, 0));
    const r = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /; the memory baseline was unreadable \(the baseline commit [0-9a-f]{12} cannot be read \([^)]*\)\): made it again from the folder's files/,
    );
    const next = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.doesNotMatch(next.stdout, /unreadable/);
    await assertSound(h.memories);
  });

  test("the first baseline killed half built: the rerun makes it", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 8 * HOUR, user: ["set up the CI pipeline"] });
    const killed = await relay(h.home, ["memories", "consolidate", ...OFFLINE], {
      RELAY_TEST_CRASH_AT: "baseline:added",
    });
    assert.equal(killed.code, null, killed.stderr);
    const rerun = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(rerun.code, 0, rerun.stderr);
    await assertSound(h.memories);
  });
});

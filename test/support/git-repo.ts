/**
 * A user's git repository for the infty repository tests: made in a temp dir with the given
 * files committed on `main`, and a fingerprint of everything of it the user owns (the working
 * tree's files, the index, HEAD and the current branch's ref), to check that a run touched none
 * of it.
 */

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** git in `dir`, as a user would run it (their identity given here, since CI machines have none). */
export function gitIn(dir: string, ...args: string[]): string {
  return execFileSync(
    "git",
    [
      "-c",
      "user.name=Test User",
      "-c",
      "user.email=user@example.com",
      "-c",
      "init.defaultBranch=main",
      "-C",
      dir,
      ...args,
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  ).trim();
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
}

/** A repository with `files` in one commit on main; removed when disposed. */
export function makeRepo(files: Record<string, string>) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-user-repo-"));
  gitIn(dir, "init", "-q", "-b", "main");
  // The user's identity, for what relay does as the user (a merge commit of relay infty apply).
  gitIn(dir, "config", "user.name", "Test User");
  gitIn(dir, "config", "user.email", "user@example.com");
  writeFiles(dir, files);
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "-q", "-m", "initial");
  return {
    dir,
    head: () => gitIn(dir, "rev-parse", "HEAD"),
    [Symbol.dispose]() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function filesUnder(root: string, rel = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(root, rel))) {
    if (rel === "" && name === ".git") continue;
    const p = path.join(rel, name);
    if (statSync(path.join(root, p)).isDirectory()) out.push(...filesUnder(root, p));
    else out.push(p);
  }
  return out.sort();
}

/**
 * A hash of what the user owns in the repository: working files (names and bytes), the index
 * (its bytes; `indexEntries`: only what it lists, for git commands that rewrite its stat data),
 * HEAD and the current branch.
 */
export function userCheckoutFingerprint(dir: string, o: { indexEntries?: boolean } = {}): string {
  const h = createHash("sha256");
  for (const f of filesUnder(dir))
    h.update(`${f}\0`)
      .update(readFileSync(path.join(dir, f)))
      .update("\0");
  h.update(o.indexEntries ? gitIn(dir, "ls-files", "--stage") : readFileSync(path.join(dir, ".git", "index")));
  h.update(readFileSync(path.join(dir, ".git", "HEAD")));
  h.update(gitIn(dir, "rev-parse", "HEAD")).update(gitIn(dir, "symbolic-ref", "HEAD"));
  return h.digest("hex");
}

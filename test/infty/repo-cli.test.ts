/**
 * `relay infty run` choosing its repository, and refusing what it cannot start from, before
 * anything of the run exists (exit 2, nothing written, the user's checkout untouched).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { makeRepo, userCheckoutFingerprint } from "../support/git-repo.ts";
import { relayArgv, useSourceRelay } from "../support/self.ts";

function relayIn(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  const [cmd, ...pre] = relayArgv();
  const child = spawn(cmd!, [...pre, ...args], { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stderr })));
}

describe("relay infty run: which repository", () => {
  test("refused before anything exists: a dirty tree (from inside it, no -C), --branch without a repository, -C of a missing folder, no git on PATH", async () => {
    useSourceRelay();
    using repo = makeRepo({ "a.txt": "a\n" });
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-repo-cli-"));
    try {
      const env = { ...process.env, RELAY_HOME: home };
      const script = ["--script", path.join(process.cwd(), "examples/infty-demo.json")];
      writeFileSync(path.join(repo.dir, "a.txt"), "changed\n");
      const before = userCheckoutFingerprint(repo.dir);
      const dirty = await relayIn(repo.dir, ["infty", "run", ...script, "x"], env);
      assert.equal(dirty.code, 2, dirty.stderr);
      assert.match(
        dirty.stderr,
        /^relay: the working tree of .* has uncommitted changes:\n {3}M a\.txt\n.*--include-uncommitted.*Nothing was started\.\n$/s,
      );
      assert.equal(userCheckoutFingerprint(repo.dir), before);
      assert.equal(
        existsSync(path.join(home, "infty")) ? readdirSync(path.join(home, "infty")).length : 0,
        0,
        "no run was created",
      );

      const outside = mkdtempSync(path.join(os.tmpdir(), "relay-no-repo-"));
      try {
        const branchAlone = await relayIn(outside, ["infty", "run", ...script, "--branch", "b", "x"], env);
        assert.equal(branchAlone.code, 2);
        assert.match(
          branchAlone.stderr,
          /--branch and --include-uncommitted need a repository: run inside one, or give it with -C <repo>/,
        );
        const noRepo = await relayIn(repo.dir, ["infty", "run", "--no-repo", ...script, "--branch", "b", "x"], env);
        assert.equal(noRepo.code, 2);
        assert.match(noRepo.stderr, /\(instead of --no-repo\)/);
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
      const missing = await relayIn(
        os.tmpdir(),
        ["infty", "run", "-C", path.join(repo.dir, "nope"), ...script, "x"],
        env,
      );
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /-C .*nope: no such folder/);

      const noGit = await relayIn(repo.dir, ["infty", "run", "--include-uncommitted", ...script, "x"], {
        ...env,
        PATH: path.join(home, "empty-path"),
      });
      assert.equal(noGit.code, 2, noGit.stderr);
      assert.match(
        noGit.stderr,
        /a run on a repository needs git, and no `git` program was found on PATH; install git, or run without a repository \(relay infty run --no-repo "objective"\)/,
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

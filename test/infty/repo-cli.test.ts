/**
 * `relay infty run` choosing its repository, and refusing what it cannot start from, before
 * anything of the run exists (exit 2, nothing written, the user's checkout untouched).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { gitIn, makeRepo, userCheckoutFingerprint } from "../support/git-repo.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";

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
    useTestRelay();
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
          /--branch, --include-uncommitted and --push need a repository: run inside one, or give it with -C <repo>/,
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

const WC_FILES = {
  "wc.mjs": 'export function count(text) {\n  return text.split(" ").length;\n}\n',
  "wc.test.mjs":
    'import assert from "node:assert/strict";\nimport { count } from "./wc.mjs";\n\nassert.equal(count("a b  c\\n"), 3);\nassert.equal(count(""), 0);\nconsole.log("wc tests passed");\n',
};

describe("relay infty run --push", { skip: skipBecause("relay infty run --push", noSandboxHere()) }, () => {
  test("no origin: refused before anything exists; an origin: the verified commit is pushed to the run's branch; a refused push leaves the run complete, says how to push, exits 1", async () => {
    useTestRelay();
    using repo = makeRepo(WC_FILES);
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-push-"));
    try {
      const env = { ...process.env, RELAY_HOME: home };
      const script = ["--script", path.join(process.cwd(), "examples/infty-repo-demo.json"), "--fail-on-tool-error"];
      const noRemote = await relayIn(repo.dir, ["infty", "run", "--push", ...script, "x"], env);
      assert.equal(noRemote.code, 2, noRemote.stderr);
      assert.match(
        noRemote.stderr,
        /--push sends the verified commit to the repository's origin remote, and .* has none; add it \(git -C .* remote add origin URL\) or leave out --push\. Nothing was started\./,
      );
      assert.equal(existsSync(path.join(home, "infty")) ? readdirSync(path.join(home, "infty")).length : 0, 0);

      const origin = path.join(home, "origin.git");
      gitIn(home, "init", "-q", "--bare", origin);
      gitIn(repo.dir, "remote", "add", "origin", origin);
      const pushed = await relayIn(repo.dir, ["infty", "run", "--push", "--run-id", "p1", ...script, "fix wc"], env);
      assert.equal(pushed.code, 0, pushed.stderr);
      const state = (id: string) =>
        JSON.parse(readFileSync(path.join(home, "infty", id, "run.json"), "utf8")) as {
          status: string;
          deliverable: { commit: string };
          repo: { push?: boolean };
        };
      assert.equal(state("p1").repo.push, true);
      assert.equal(gitIn(origin, "rev-parse", "relay/p1"), state("p1").deliverable.commit);
      assert.match(
        pushed.stderr,
        new RegExp(`pushed ${state("p1").deliverable.commit.slice(0, 12)} to relay/p1 on ${origin}`),
      );

      // The remote refuses every push (a hook): the run is still complete, and the message says how to push.
      writeFileSync(path.join(origin, "hooks", "pre-receive"), "#!/bin/sh\necho refused by policy >&2\nexit 1\n");
      chmodSync(path.join(origin, "hooks", "pre-receive"), 0o755);
      const refused = await relayIn(repo.dir, ["infty", "run", "--push", "--run-id", "p2", ...script, "fix wc"], env);
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(
        refused.stderr,
        /run p2 is complete, but its push failed: pushing [0-9a-f]{12} to relay\/p2 on .* failed: .*refused by policy/s,
      );
      assert.match(refused.stderr, /push it yourself: git -C .* push origin [0-9a-f]{40}:refs\/heads\/relay\/p2/);
      assert.equal(state("p2").status, "complete");
      assert.match(readFileSync(path.join(home, "infty", "p2", "events.jsonl"), "utf8"), /"type":"pushed","ok":false/);
      assert.throws(() => gitIn(origin, "rev-parse", "--verify", "relay/p2"));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/**
 * The repository side of infty, without models: deciding what a run starts from (clean tree,
 * free branch, uncommitted changes snapshotted through a temporary index), the run's checkouts,
 * the orchestrator's commits (no hooks, its own identity), rewinds and `relay infty apply`.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { listCheckpoints } from "../../src/infty/checkpoints.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { applyCommit, commitToApply } from "../../src/infty/repo/apply.ts";
import {
  branchDiff,
  commitCheckout,
  ensureCheckout,
  prepareReview,
  rewindCheckout,
} from "../../src/infty/repo/checkout.ts";
import { checkoutDir, type RepoRecord, reviewDir } from "../../src/infty/repo/record.ts";
import { findRepository, prepareRepository } from "../../src/infty/repo/repository.ts";
import { restoreRun } from "../../src/infty/restore.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { reply } from "../support/fake-model-server.ts";
import { gitIn, makeRepo, userCheckoutFingerprint, writeFiles } from "../support/git-repo.ts";
import { setup, sig } from "../support/infty-timeline.ts";

function runDir(): { dir: string } & Disposable {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-run-store-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

async function prepared(
  repoDir: string,
  runId = "r1",
  more: { branch?: string; includeUncommitted?: boolean } = {},
): Promise<RepoRecord> {
  const r = await prepareRepository({ dir: repoDir, ...more }, runId);
  assert.ok("ok" in r, JSON.stringify(r));
  return r.ok;
}

describe("infty on a repository: what a run starts from", () => {
  test("a clean repository: its top (also from a subfolder), HEAD, the branch relay/<run-id>", async () => {
    using repo = makeRepo({ "src/a.txt": "a\n" });
    const rec = await prepared(path.join(repo.dir, "src"));
    const top = gitIn(repo.dir, "rev-parse", "--show-toplevel");
    assert.deepEqual(rec, {
      path: top,
      git_dir: path.join(top, ".git"),
      branch: "relay/r1",
      base_commit: repo.head(),
      base_branch: "main",
      start_commit: repo.head(),
      head_commit: repo.head(),
    });
  });

  test("refused with the fix: a dirty tree, a taken or invalid branch, no repository, no commit yet; nothing is changed", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    writeFileSync(path.join(repo.dir, "a.txt"), "changed\n");
    writeFileSync(path.join(repo.dir, "new.txt"), "new\n");
    const before = userCheckoutFingerprint(repo.dir);
    const dirty = await prepareRepository({ dir: repo.dir }, "r1");
    assert.ok("error" in dirty);
    assert.equal(dirty.error.code, "repo_dirty");
    assert.match(
      dirty.error.message,
      /has uncommitted changes:\n {3}M a\.txt\n {2}\?\? new\.txt\n.*git stash -u.*--include-uncommitted.*Nothing was started\./s,
    );
    assert.equal(userCheckoutFingerprint(repo.dir), before);
    gitIn(repo.dir, "stash", "-u");
    gitIn(repo.dir, "branch", "relay/taken");
    const taken = await prepareRepository({ dir: repo.dir, branch: "relay/taken" }, "r1");
    assert.ok(
      "error" in taken &&
        taken.error.code === "branch_exists" &&
        /pick another with --branch NAME/.test(taken.error.message),
    );
    const invalid = await prepareRepository({ dir: repo.dir, branch: "bad..name" }, "r1");
    assert.ok("error" in invalid && invalid.error.code === "invalid_branch");
    const outside = mkdtempSync(path.join(os.tmpdir(), "relay-not-a-repo-"));
    try {
      const none = await prepareRepository({ dir: outside }, "r1");
      assert.ok(
        "error" in none && none.error.code === "not_a_repository" && /-C <repo>.*--no-repo/.test(none.error.message),
      );
      assert.deepEqual(await findRepository(outside), { ok: null });
      gitIn(outside, "init", "-q");
      const empty = await prepareRepository({ dir: outside }, "r1");
      assert.ok(
        "error" in empty && empty.error.code === "repo_no_commit" && /commit its files first/.test(empty.error.message),
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test("--include-uncommitted: the branch starts with a commit of the changes (untracked files too, ignored ones not); the user's index, tree and HEAD stay as they are", async () => {
    using repo = makeRepo({ "a.txt": "a\n", ".gitignore": "*.log\n" });
    writeFileSync(path.join(repo.dir, "a.txt"), "changed\n");
    writeFileSync(path.join(repo.dir, "staged.txt"), "staged\n");
    gitIn(repo.dir, "add", "staged.txt");
    writeFileSync(path.join(repo.dir, "new.txt"), "new\n");
    writeFileSync(path.join(repo.dir, "debug.log"), "ignored\n");
    const before = userCheckoutFingerprint(repo.dir);
    const status = gitIn(repo.dir, "status", "--porcelain");
    const rec = await prepared(repo.dir, "r1", { includeUncommitted: true });
    assert.equal(userCheckoutFingerprint(repo.dir), before);
    assert.equal(gitIn(repo.dir, "status", "--porcelain"), status);
    assert.notEqual(rec.start_commit, rec.base_commit);
    assert.equal(rec.head_commit, rec.start_commit);
    assert.equal(gitIn(repo.dir, "rev-parse", `${rec.start_commit}^`), repo.head());
    assert.deepEqual(gitIn(repo.dir, "ls-tree", "--name-only", rec.start_commit).split("\n"), [
      ".gitignore",
      "a.txt",
      "new.txt",
      "staged.txt",
    ]);
    assert.equal(gitIn(repo.dir, "show", `${rec.start_commit}:a.txt`), "changed");
  });
});

describe("infty on a repository: the run's checkouts and commits", () => {
  test("the Solver's checkout is a worktree on the run's branch; commits are the orchestrator's, run no hooks, and leave the user's checkout alone", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    using store = runDir();
    // A hook in the user's repository must not run on a tree a model wrote.
    writeFiles(repo.dir, {
      ".git/hooks/pre-commit": '#!/bin/sh\ntouch "$(git rev-parse --git-common-dir)/hook-ran"\n',
    });
    gitIn(repo.dir, "config", "core.hooksPath", ".git/hooks");
    chmodSync(path.join(repo.dir, ".git/hooks/pre-commit"), 0o755);
    const before = userCheckoutFingerprint(repo.dir);
    const rec = await prepared(repo.dir);
    const co = await ensureCheckout(rec, store.dir);
    assert.deepEqual(co, { ok: checkoutDir(store.dir) });
    assert.deepEqual(await ensureCheckout(rec, store.dir), co, "again: the same checkout");
    assert.equal(gitIn(co.ok, "symbolic-ref", "--short", "HEAD"), "relay/r1");

    const same = await commitCheckout(rec, store.dir, "nothing changed");
    assert.deepEqual(same, { ok: { commit: repo.head(), changed: false } });
    writeFileSync(path.join(co.ok, "a.txt"), "fixed\n");
    writeFileSync(path.join(co.ok, "b.txt"), "new\n");
    const made = await commitCheckout(
      rec,
      store.dir,
      "relay infty r1: verification of memory/claims/a.json (Solver turn 3)",
    );
    assert.ok("ok" in made && made.ok.changed);
    assert.equal(gitIn(repo.dir, "rev-parse", "relay/r1"), made.ok.commit);
    assert.equal(
      gitIn(repo.dir, "log", "-1", "--format=%an <%ae>|%cn|%s", made.ok.commit),
      "relay infty <infty@relay.invalid>|relay infty|relay infty r1: verification of memory/claims/a.json (Solver turn 3)",
    );
    assert.equal(existsSync(path.join(repo.dir, ".git", "hook-ran")), false, "no hook ran");
    assert.equal(
      userCheckoutFingerprint(repo.dir),
      before,
      "the user's files, index, HEAD and branch are as they were",
    );
    const diff = await branchDiff(rec, made.ok.commit);
    assert.ok("ok" in diff);
    assert.match(diff.ok, /^\+fixed$/m);
  });

  test("the Verifiers' checkout holds exactly the commit under review: no leftovers, ignored files included", async () => {
    using repo = makeRepo({ "a.txt": "a\n", ".gitignore": "build/\n" });
    using store = runDir();
    const rec = await prepared(repo.dir);
    await ensureCheckout(rec, store.dir);
    writeFileSync(path.join(checkoutDir(store.dir), "a.txt"), "two\n");
    const second = await commitCheckout(rec, store.dir, "second");
    assert.ok("ok" in second);
    const review = await prepareReview(rec, store.dir, rec.base_commit);
    assert.deepEqual(review, { ok: reviewDir(store.dir) });
    writeFiles(review.ok, { "stray.txt": "x", "build/out.o": "x", "a.txt": "tampered\n" });
    const again = await prepareReview(rec, store.dir, second.ok.commit);
    assert.ok("ok" in again);
    assert.equal(readFileSync(path.join(again.ok, "a.txt"), "utf8"), "two\n");
    assert.equal(existsSync(path.join(again.ok, "stray.txt")), false);
    assert.equal(existsSync(path.join(again.ok, "build")), false);
    assert.equal(gitIn(again.ok, "rev-parse", "HEAD"), second.ok.commit);
  });

  test("a checkout lost or cut short by a crash is made again on the branch where it stands", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    using store = runDir();
    const rec = await prepared(repo.dir);
    await ensureCheckout(rec, store.dir);
    writeFileSync(path.join(checkoutDir(store.dir), "a.txt"), "mine\n");
    const c = await commitCheckout(rec, store.dir, "work");
    assert.ok("ok" in c);
    rmSync(checkoutDir(store.dir), { recursive: true, force: true });
    mkdirSync(checkoutDir(store.dir));
    writeFileSync(path.join(checkoutDir(store.dir), "half-written"), "x");
    const again = await ensureCheckout(rec, store.dir);
    assert.ok("ok" in again, JSON.stringify(again));
    assert.equal(gitIn(again.ok, "rev-parse", "HEAD"), c.ok.commit);
    assert.equal(readFileSync(path.join(again.ok, "a.txt"), "utf8"), "mine\n");
  });

  test("a rewind moves the branch back and keeps what the checkout held on a ref", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    using store = runDir();
    const rec = await prepared(repo.dir);
    const co = checkoutDir(store.dir);
    await ensureCheckout(rec, store.dir);
    writeFileSync(path.join(co, "a.txt"), "one\n");
    const one = await commitCheckout(rec, store.dir, "one");
    assert.ok("ok" in one);
    writeFileSync(path.join(co, "a.txt"), "two\n");
    const two = await commitCheckout(rec, store.dir, "two");
    assert.ok("ok" in two);
    writeFileSync(path.join(co, "a.txt"), "uncommitted\n");
    writeFileSync(path.join(co, "scratch.txt"), "x\n");
    const kept = await rewindCheckout(rec, store.dir, one.ok.commit, "refs/relay-infty/r1/before-restore-1");
    assert.deepEqual(kept, { ok: "refs/relay-infty/r1/before-restore-1" });
    assert.equal(gitIn(repo.dir, "rev-parse", "relay/r1"), one.ok.commit);
    assert.equal(readFileSync(path.join(co, "a.txt"), "utf8"), "one\n");
    assert.equal(existsSync(path.join(co, "scratch.txt")), false);
    assert.equal(gitIn(repo.dir, "show", "refs/relay-infty/r1/before-restore-1:a.txt"), "uncommitted");
    assert.equal(
      gitIn(repo.dir, "rev-parse", "refs/relay-infty/r1/before-restore-1^"),
      two.ok.commit,
      "the later commit stays reachable",
    );
    assert.deepEqual(
      await rewindCheckout(rec, store.dir, one.ok.commit, "refs/relay-infty/r1/again"),
      { ok: null },
      "nothing to keep the second time",
    );
  });
});

describe("relay infty apply", () => {
  const meta = (rec: RepoRecord, deliverable: string | null) =>
    ({
      run_id: "r1",
      status: deliverable ? "complete" : "interrupted",
      repo: rec,
      deliverable: deliverable ? { path: "/x", summary: null, branch: rec.branch, commit: deliverable } : null,
    }) as unknown as RunStore["state"];

  test("the verified commit: a fast-forward, then 'already merged'; --no-ff makes a merge commit as the user", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    using store = runDir();
    const rec = await prepared(repo.dir);
    await ensureCheckout(rec, store.dir);
    writeFileSync(path.join(checkoutDir(store.dir), "a.txt"), "fixed\n");
    const c = await commitCheckout(rec, store.dir, "fix");
    assert.ok("ok" in c);
    assert.ok("error" in commitToApply(meta(rec, null), {}), "no verified delivery: refused");
    assert.deepEqual(commitToApply(meta(rec, null), { unverified: true }), {
      ok: { repo: rec, commit: rec.head_commit },
    });
    const got = commitToApply(meta(rec, c.ok.commit), {});
    assert.ok("ok" in got);
    const ff = await applyCommit(rec, got.ok.commit, "r1", {});
    assert.deepEqual(ff, { ok: { commit: c.ok.commit, into: "main", how: "fast-forward", head: c.ok.commit } });
    assert.equal(readFileSync(path.join(repo.dir, "a.txt"), "utf8"), "fixed\n");
    const again = await applyCommit(rec, c.ok.commit, "r1", {});
    assert.ok("ok" in again && again.ok.how === "already merged");

    using other = makeRepo({ "a.txt": "a\n" });
    const rec2 = await prepared(other.dir);
    using store2 = runDir();
    await ensureCheckout(rec2, store2.dir);
    writeFileSync(path.join(checkoutDir(store2.dir), "b.txt"), "b\n");
    const c2 = await commitCheckout(rec2, store2.dir, "add b");
    assert.ok("ok" in c2);
    const mainBefore = other.head();
    const merged = await applyCommit(rec2, c2.ok.commit, "r1", { noFastForward: true });
    assert.ok("ok" in merged && merged.ok.how === "merge commit", JSON.stringify(merged));
    assert.equal(
      gitIn(other.dir, "log", "-1", "--format=%an|%P|%s", "HEAD"),
      `Test User|${mainBefore} ${c2.ok.commit}|Merge relay infty run r1 (relay/r1 at ${c2.ok.commit.slice(0, 12)})`,
    );
  });

  test("refused, changing nothing: a dirty tree; a conflict (aborted, the files named)", async () => {
    using repo = makeRepo({ "a.txt": "a\n" });
    using store = runDir();
    const rec = await prepared(repo.dir);
    await ensureCheckout(rec, store.dir);
    writeFileSync(path.join(checkoutDir(store.dir), "a.txt"), "theirs\n");
    const c = await commitCheckout(rec, store.dir, "fix");
    assert.ok("ok" in c);
    writeFileSync(path.join(repo.dir, "a.txt"), "mine, uncommitted\n");
    const dirty = await applyCommit(rec, c.ok.commit, "r1", {});
    assert.ok(
      "error" in dirty &&
        dirty.error.code === "repo_dirty" &&
        /Commit or stash them.*relay infty apply r1\. Nothing was merged\./s.test(dirty.error.message),
    );
    gitIn(repo.dir, "commit", "-qam", "mine");
    const before = userCheckoutFingerprint(repo.dir, { indexEntries: true });
    const conflict = await applyCommit(rec, c.ok.commit, "r1", {});
    assert.ok("error" in conflict && conflict.error.code === "merge_failed", JSON.stringify(conflict));
    assert.match(conflict.error.message, /failed in a\.txt, so it was aborted and nothing changed/);
    assert.equal(userCheckoutFingerprint(repo.dir, { indexEntries: true }), before);
  });
});

describe("a run on a repository, restored and resumed", () => {
  test("restore rewinds the run's branch and checkout to the checkpoint's commit (what they held kept on a ref); the resumed run commits on from there", async () => {
    await using t = await setup();
    using repo = makeRepo({ "answer.txt": "0\n" });
    const dir = path.join(t.home, "infty", "rr");
    const claim = path.join(dir, "memory/claims/a.json");
    const write = (text: string) => reply().toolCall("exec_command", { cmd: `printf '${text}\\n' > answer.txt` });
    const claimIt = reply().toolCall("exec_command", {
      cmd: `mkdir -p "$RELAY_RUN_STORE/memory/claims" && echo '{"claim":"answer.txt says 42"}' > "${claim}"`,
    });
    const readme = reply().toolCall("exec_command", {
      cmd: `printf '# a\\n## Manifest\\nnone\\n## How to verify\\ncat answer.txt\\n## Limitations\\nnone\\n' > "$RELAY_RUN_STORE/deliverable/README.md"`,
    });
    t.server.enqueue(
      write("41"),
      claimIt,
      sig({ type: "verification_request", claim_path: "memory/claims/a.json" }),
      sig({ verdict: "fail", reasons: ["41"], suggestions: [] }),
      write("42"),
      sig({ type: "verification_request", claim_path: "memory/claims/a.json" }),
      sig({ verdict: "pass", reasons: ["42"], suggestions: [] }),
      readme,
      sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      sig({ verdict: "pass", reasons: ["42"], suggestions: [] }),
    );
    const first = await runInfty({
      home: t.home,
      config: t.config,
      objective: "answer 42",
      runId: "rr",
      verifiers: 1,
      repo: { dir: repo.dir },
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in first && first.ok.status === "complete", JSON.stringify(first));
    const commits = gitIn(repo.dir, "log", "--format=%H", "relay/rr").split("\n");
    assert.equal(commits.length, 3, "the base, the 41 claim, the 42 claim");
    const [c42, c41] = commits;
    assert.equal(first.ok.commit, c42);
    const ckpts = await listCheckpoints(dir);
    assert.ok("ok" in ckpts);
    const afterFail = ckpts.ok.find((c) => c.summary.includes("fail (0/1 passed)"))!;
    assert.equal(afterFail.repo_commit, c41);

    const store = await RunStore.load(t.home, "rr");
    assert.ok("ok" in store);
    const restored = await restoreRun(store.ok, afterFail.id);
    assert.ok("ok" in restored, JSON.stringify(restored));
    assert.deepEqual(
      { ...restored.ok.repo, kept_at: undefined },
      { branch: "relay/rr", commit: c41, kept_at: undefined },
    );
    assert.equal(gitIn(repo.dir, "rev-parse", "relay/rr"), c41);
    assert.equal(readFileSync(path.join(checkoutDir(dir), "answer.txt"), "utf8"), "41\n");
    assert.equal(gitIn(repo.dir, "rev-parse", restored.ok.repo!.kept_at!), c42, "the later commit stays reachable");
    const after = await RunStore.load(t.home, "rr");
    assert.ok(
      "ok" in after &&
        after.ok.state.repo?.head_commit === c41 &&
        after.ok.state.status === "interrupted" &&
        after.ok.state.deliverable === null,
    );

    t.server.enqueue(
      write("42 again"),
      sig({ type: "verification_request", claim_path: "memory/claims/a.json" }),
      sig({ verdict: "pass", reasons: ["42"], suggestions: [] }),
      readme,
      sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      sig({ verdict: "pass", reasons: ["42"], suggestions: [] }),
    );
    const resumed = await runInfty({
      home: t.home,
      config: t.config,
      runId: "rr",
      resume: true,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in resumed && resumed.ok.status === "complete", JSON.stringify(resumed));
    assert.equal(
      gitIn(repo.dir, "rev-parse", `${resumed.ok.commit}^`),
      c41,
      "the new work sits on the restored commit",
    );
    assert.equal(gitIn(repo.dir, "show", `${resumed.ok.commit}:answer.txt`), "42 again");
  });
});

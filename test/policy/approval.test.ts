import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { ApprovalCache, evaluateExec, isKnownSafe, terminalApprover } from "../../src/policy/approval.ts";
import { loadBashGrammar } from "../../src/util/bash-grammar.ts";
import { deferred, until } from "../support/wait.ts";

// command-safety.ts reads commands with the bash grammar, loaded once per process.
await loadBashGrammar();

describe("approvals", () => {
  test("known-safe commands are read-only pipelines without redirection", async () => {
    for (const c of ["ls -la", "git status", "cat a | grep b", "rg foo src && wc -l x"])
      assert.ok(await isKnownSafe(c), c);
    for (const c of [
      "rm -rf x",
      "echo hi > f",
      "git push",
      "sed -i s/a/b/ f",
      "find . -delete",
      "cat $(rm -f x)",
      "npm test",
    ])
      assert.ok(!(await isKnownSafe(c)), c);
  });

  test("policies decide skip, ask or refuse", async () => {
    assert.equal((await evaluateExec("never", "rm x", "/", false)).type, "skip");
    assert.equal((await evaluateExec("never", "rm x", "/", true)).type, "refuse");
    assert.equal((await evaluateExec("on-request", "rm x", "/", false)).type, "skip");
    assert.equal((await evaluateExec("on-request", "rm x", "/", true)).type, "ask");
    assert.equal((await evaluateExec("untrusted", "ls", "/", false)).type, "skip");
    assert.equal((await evaluateExec("untrusted", "make", "/", false)).type, "ask");
  });

  test("the terminal prompt re-asks on unclear answers and remembers 'always' for the session", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    const prompts = () => (shown.match(/approve\? \[y\]es/g) ?? []).length;
    const askedAgain = deferred();
    output.on("data", (d: Buffer) => {
      shown += d.toString();
      if (prompts() === 2) askedAgain.resolve();
    });
    const cache = new ApprovalCache(terminalApprover(input, output));
    const first = cache.decide({ kind: "exec", summary: "make deploy", cwd: "/srv", justification: "ship it" });
    input.write("maybe\n");
    // A line typed before the prompt is shown again would not answer it.
    await until(askedAgain.promise, "the prompt to ask again after an unclear answer");
    input.write("a\n");
    assert.equal(await first, "approved_for_session");
    assert.match(shown, /relay wants to run this command in \/srv:\n {2}make deploy\nreason: ship it/);
    assert.equal(prompts(), 2, "asked again after an unclear answer");
    assert.equal(
      await cache.decide({ kind: "exec", summary: "make deploy", cwd: "/srv" }),
      "approved",
      "remembered without asking",
    );
    const other = cache.decide({ kind: "escalation", summary: "rm -rf /tmp/x", cwd: "/" });
    input.write("n\n");
    assert.equal(await other, "denied");
    assert.match(shown, /OUTSIDE the sandbox/);
  });
});

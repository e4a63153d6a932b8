/**
 * The job infty is for, end to end: a user's repository with a failing test, `relay infty run
 * -C repo "make the test pass"` under the default sandbox, models played over real SSE by the
 * fake server, the real executor, sandbox and git. Shared by the source-tree test and the
 * compiled binary's (`relay` is the command that starts relay).
 *
 * Checked: the branch holds a commit whose checkout passes the test; the user's checkout is
 * byte-identical until `relay infty apply`; the Verifier ran in a clean, read-only checkout of
 * the commit it judged; no role could write run.json, events.jsonl, the lease, index/*.json or
 * .checkpoints.git, while the model's own files were writable.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readClaimsIndex } from "../../src/infty/index-files.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "./fake-model-server.ts";
import { gitIn, makeRepo, userCheckoutFingerprint } from "./git-repo.ts";

const sig = (o: unknown) => reply().text(JSON.stringify(o));

const REPO_FILES = {
  "add.sh": "#!/bin/sh\necho $(( $1 - $2 ))\n",
  "test.sh":
    '#!/bin/sh\nif [ "$(sh add.sh 2 3)" = 5 ]; then echo PASS; else echo "FAIL: add.sh 2 3 gave $(sh add.sh 2 3)"; exit 1; fi\n',
};

const FIX = {
  input: "*** Begin Patch\n*** Update File: add.sh\n@@\n-echo $(( $1 - $2 ))\n+echo $(( $1 + $2 ))\n*** End Patch\n",
};

/** The orchestrator's files, each appended to by the Solver's command (every append must be refused). */
const ORCHESTRATOR_FILES = [
  "run.json",
  "events.jsonl",
  "lease.json",
  "index/claims.json",
  "index/artifacts.json",
  "index/claims/0001.json",
  "index/artifacts/9999.json",
  ".checkpoints.git/HEAD",
];
const TAMPER = [
  `for f in ${ORCHESTRATOR_FILES.join(" ")}; do if (echo tampered >> "$RELAY_RUN_STORE/$f") 2>/dev/null; then echo "wrote $f"; else echo "refused $f"; fi; done`,
  'echo "- add.sh: the fix" >> "$RELAY_RUN_STORE/index/README.md" && echo "wrote index/README.md"',
  'echo note > "$RELAY_RUN_STORE/artifacts/note.txt" && echo "wrote artifacts/note.txt"',
  'git commit --allow-empty -qm sneaky 2>/dev/null && echo "committed" || echo "no commit"',
].join("; ");

const README = [
  "# Fix of add.sh",
  "add.sh added with a minus sign; it adds now.",
  "## Manifest",
  "none",
  "## How to verify",
  "    sh test.sh",
  "## Limitations",
  "none",
].join("\n");

function enqueue(server: FakeModelServer, runDir: string): void {
  server.enqueue(
    // Solver: sees the failure, fixes it, tries the orchestrator's files, writes its claim.
    reply().toolCall("exec_command", { cmd: "sh test.sh; echo rc=$?" }, { callId: "call_before" }),
    reply().toolCall("apply_patch", FIX, { callId: "call_fix" }),
    reply().toolCall("exec_command", { cmd: TAMPER }, { callId: "call_tamper" }),
    reply().toolCall(
      "apply_patch",
      { input: `*** Begin Patch\n*** Add File: ${path.join(runDir, "run.json")}\n+{}\n*** End Patch\n` },
      { callId: "call_patch_run_json" },
    ),
    reply().toolCall("apply_patch", {
      input: `*** Begin Patch\n*** Add File: ${path.join(runDir, "memory/claims/fix.json")}\n+${JSON.stringify({ claim: "sh test.sh passes", evidence: ["sh test.sh"] })}\n*** End Patch\n`,
    }),
    sig({ type: "verification_request", claim_path: "memory/claims/fix.json", notes: "add.sh adds now" }),
    // Verifier: where it is, what it sees, whether it can write there.
    reply().toolCall(
      "exec_command",
      {
        cmd: 'pwd; git rev-parse HEAD; git status --porcelain; echo status-end; sh test.sh; if touch written-by-verifier 2>/dev/null; then echo "verifier wrote"; else echo "verifier refused"; fi',
      },
      { callId: "call_verify" },
    ),
    sig({ verdict: "pass", reasons: ["sh test.sh prints PASS"], suggestions: [] }),
    // Solver: the deliverable's README, then the delivery.
    reply().toolCall("exec_command", { cmd: `cat > "$RELAY_RUN_STORE/deliverable/README.md" <<'EOF'\n${README}\nEOF` }),
    sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "add.sh adds" }),
    reply().toolCall("exec_command", { cmd: "pwd; git rev-parse HEAD; sh test.sh" }, { callId: "call_final" }),
    sig({ verdict: "pass", reasons: ["the commit passes sh test.sh"], suggestions: [] }),
  );
}

/** The output the model got for tool call `callId`. */
function outputOf(server: FakeModelServer, callId: string): string {
  for (const r of server.requests) {
    for (const item of (r.body.input ?? []) as Array<{ type: string; call_id?: string; output?: unknown }>) {
      if (item.type === "function_call_output" && item.call_id === callId)
        return typeof item.output === "string" ? item.output : JSON.stringify(item.output);
    }
  }
  throw new Error(`no output for ${callId}`);
}

function run(
  relay: string[],
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(relay[0]!, [...relay.slice(1), ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

export async function repoRunFixesTheTest(relay: string[], baseEnv: NodeJS.ProcessEnv): Promise<void> {
  using repo = makeRepo(REPO_FILES);
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-repo-run-home-"));
  const server = await startFakeModelServer();
  try {
    const env = { ...baseEnv, RELAY_HOME: home };
    const runDir = path.join(home, "infty", "fix");
    enqueue(server, runDir);
    assert.throws(
      () => execFileSync("sh", ["test.sh"], { cwd: repo.dir, stdio: "ignore" }),
      "the test fails before the run",
    );
    const before = userCheckoutFingerprint(repo.dir);
    const base = repo.head();

    const r = await run(
      relay,
      [
        "infty",
        "run",
        "-C",
        repo.dir,
        "--run-id",
        "fix",
        "--base-url",
        server.baseUrl,
        "-m",
        "m",
        "make the test pass",
      ],
      env,
      os.tmpdir(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `working on ${realpathSync(repo.dir)} in its own checkout ${path.join(runDir, "checkout")}, branch relay/fix`,
      ),
    );
    assert.equal(r.stdout.trim().split("\n").at(-1), path.join(runDir, "deliverable"));
    assert.equal(server.queued, 0, "every scripted reply was used");

    // The branch holds a commit whose own checkout passes the test.
    const state = JSON.parse(readFileSync(path.join(runDir, "run.json"), "utf8")) as {
      status: string;
      deliverable: { commit: string; branch: string };
      repo: { head_commit: string; base_commit: string };
    };
    assert.equal(state.status, "complete");
    const commit = state.deliverable.commit;
    assert.equal(state.deliverable.branch, "relay/fix");
    assert.equal(gitIn(repo.dir, "rev-parse", "relay/fix"), commit);
    assert.equal(
      gitIn(repo.dir, "rev-parse", `${commit}^`),
      base,
      "one commit: the Solver's own `git commit` was refused",
    );
    assert.equal(gitIn(repo.dir, "log", "-1", "--format=%an", commit), "relay infty");
    const fresh = mkdtempSync(path.join(os.tmpdir(), "relay-fresh-checkout-"));
    try {
      execFileSync("sh", ["-c", `git -C "${repo.dir}" archive ${commit} | tar -x -C "${fresh}"`]);
      assert.equal(execFileSync("sh", ["test.sh"], { cwd: fresh, encoding: "utf8" }), "PASS\n");
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }

    // The user's checkout is as it was: files, index, HEAD, branch.
    assert.equal(userCheckoutFingerprint(repo.dir), before);
    assert.match(outputOf(server, "call_before"), /FAIL: add\.sh 2 3 gave -1\nrc=1/);

    // The Verifiers judged a clean, read-only checkout of exactly the commit.
    const verify = outputOf(server, "call_verify");
    assert.match(
      verify,
      new RegExp(`${path.join(runDir, "review")}\\n${commit}\\nstatus-end\\nPASS\\nverifier refused`),
    );
    assert.match(outputOf(server, "call_final"), new RegExp(`${path.join(runDir, "review")}\\n${commit}\\nPASS`));

    // No role wrote the orchestrator's files; the model's own were writable; .git was read-only.
    const tamper = outputOf(server, "call_tamper");
    for (const f of ORCHESTRATOR_FILES) assert.match(tamper, new RegExp(`refused ${f.replace(/\./g, "\\.")}\\n`));
    assert.match(tamper, /wrote index\/README\.md\nwrote artifacts\/note\.txt\nno commit/);
    assert.match(outputOf(server, "call_patch_run_json"), /Cannot write .*run\.json/);
    for (const f of ["run.json", "events.jsonl", "lease.json", "index/claims.json", "index/artifacts.json"])
      assert.doesNotMatch(readFileSync(path.join(runDir, f), "utf8"), /^tampered$/m, f);
    for (const line of readFileSync(path.join(runDir, "events.jsonl"), "utf8").trim().split("\n")) JSON.parse(line);
    assert.match(readFileSync(path.join(runDir, "index/README.md"), "utf8"), /- add\.sh: the fix/);

    // What the run recorded of the commit: the claim's round, the checkpoint, the diff beside the deliverable.
    const claims = (await readClaimsIndex(runDir))!;
    assert.equal(claims.claims[0]!.rounds[0]!.commit, commit);
    const diff = readFileSync(path.join(runDir, "deliverable/branch.diff"), "utf8");
    assert.match(diff, /^\+echo \$\(\( \$1 \+ \$2 \)\)$/m);
    const shown = await run(relay, ["infty", "diff", "fix"], env, os.tmpdir());
    assert.equal(shown.stdout, diff);
    const ckpts = await run(relay, ["infty", "checkpoints", "fix", "--json"], env, os.tmpdir());
    assert.equal((JSON.parse(ckpts.stdout) as Array<{ repo_commit?: string }>).at(-1)!.repo_commit, commit);
    const status = await run(relay, ["infty", "status", "fix"], env, os.tmpdir());
    assert.match(
      status.stdout,
      new RegExp(`branch: +relay/fix at ${commit.slice(0, 12)}; verified delivery ${commit.slice(0, 12)}`),
    );

    // Only when asked: the verified commit goes into the user's branch.
    const applied = await run(relay, ["infty", "apply", "fix"], env, os.tmpdir());
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /into main .*: fast-forward/);
    assert.equal(execFileSync("sh", ["test.sh"], { cwd: repo.dir, encoding: "utf8" }), "PASS\n");
    assert.ok(existsSync(path.join(runDir, "checkout", "add.sh")));
  } finally {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  }
}

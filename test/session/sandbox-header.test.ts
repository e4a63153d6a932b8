/**
 * A session says how its commands are confined before the first one runs: in the header, in
 * --json events and in the rollout's turn_context, including what best effort leaves out.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();
const skip = skipBecause(
  "sandbox in the session header",
  support.landlock && support.landlock.abi >= 3
    ? false
    : `the built-in sandbox cannot run here: ${support.landlock?.detail ?? support.detail}`,
);

function rolloutFiles(dir: string): string[] {
  const out: string[] = [];
  for (const f of readdirSync(dir, { recursive: true }) as string[])
    if (f.endsWith(".jsonl")) out.push(path.join(dir, f));
  return out;
}

describe("sandbox in the session header", { skip }, () => {
  let base = "";
  let script = "";
  before(() => {
    base = mkdtempSync(path.join(os.tmpdir(), "relay-sandbox-header-"));
    script = path.join(base, "script.json");
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          {
            text: "checking",
            tool_calls: [{ name: "exec_command", arguments: { cmd: "echo hello > made.txt && cat made.txt" } }],
          },
          { text: "done" },
        ],
      }),
    );
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  const session = async (name: string, simulate: string, extra: string[] = []) => {
    const home = path.join(base, name, "home");
    const ws = path.join(base, name, "ws");
    mkdirSync(ws, { recursive: true });
    mkdirSync(home, { recursive: true });
    const env = { ...process.env, RELAY_HOME: home, RELAY_SANDBOX_SIMULATE: simulate };
    const r = await runRelayAsync(
      ["run", "--script", script, "--approval", "never", "--cd", ws, ...extra, "make a file"],
      env,
    );
    return { ...r, home, ws };
  };

  test("the default: the header names the built-in mechanism and the command runs", async () => {
    const r = await session("default", "no-bwrap");
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /\nsandbox workspace-write · landlock\n/);
    assert.equal(readFileSync(path.join(r.ws, "made.txt"), "utf8"), "hello\n");
    const lines = readFileSync(rolloutFiles(r.home)[0]!, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; payload: { sandbox_policy?: unknown } });
    const ctx = lines.find((l) => l.type === "turn_context");
    assert.deepEqual(ctx?.payload.sandbox_policy, {
      type: "workspace-write",
      network_access: false,
      mechanism: "landlock",
    });
  });

  test("best effort on an old kernel: the header and the rollout say what is not enforced", async () => {
    const r = await session("weak", "landlock-abi=2,no-bwrap", ["--sandbox-best-effort", "--json"]);
    assert.equal(r.status, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; gaps?: string[]; mechanism?: string });
    const header = events.find((e) => e.type === "sandbox");
    assert.equal(header?.mechanism, "landlock");
    assert.match(header?.gaps?.join() ?? "", /Landlock ABI 3 for truncate control/);
    const ctx = readFileSync(rolloutFiles(r.home)[0]!, "utf8")
      .split("\n")
      .find((l) => l.includes('"turn_context"'));
    assert.match(ctx ?? "", /"best_effort_gaps":\["Landlock ABI 3 for truncate control/);
  });

  test("no sandbox possible: the header says every command will be refused, and the command is", async () => {
    const r = await session("none", "landlock-abi=0,no-bwrap");
    assert.match(
      r.stderr,
      /sandbox: every command will be refused: the workspace-write sandbox cannot be applied on this host/,
    );
    assert.match(r.stderr, /✗/, "the tool call failed");
    assert.throws(() => readFileSync(path.join(r.ws, "made.txt")), "nothing ran");
    assert.equal(r.status, 0, "the model finished its turn, so without --fail-on-tool-error the run succeeds");
    const strict = await session("none-strict", "landlock-abi=0,no-bwrap", ["--fail-on-tool-error"]);
    assert.equal(strict.status, 1);
    assert.match(
      strict.stderr,
      /relay: 1 tool call\(s\) failed; the first, exec_command: exec_command failed for `echo hello > made.txt && cat made.txt`: the workspace-write sandbox cannot be applied/,
    );
  });
});

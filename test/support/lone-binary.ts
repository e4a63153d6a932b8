/** What the compiled-binary tests share: a lone copy of the binary, and the bash-grammar approval check. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * `relay run -a untrusted` with a scripted model in a new `dir`: a command only the bash grammar
 * reads (`case`, `[[ ]]`) runs without asking; `rm` asks and, with no terminal, is refused.
 */
export function assertGrammarApproval(relay: string, dir: string, env: Record<string, string>): void {
  const ws = path.join(dir, "ws");
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(ws, "keep.txt"), "keep\n");
  const call = (cmd: string) => ({ name: "exec_command", arguments: { cmd } });
  const script = {
    turns: [
      { tool_calls: [call("[[ 3 -gt 2 ]] && case x in x) echo grammar-ok;; esac")] },
      { tool_calls: [call("rm -f keep.txt")] },
      { text: "done" },
    ],
  };
  writeFileSync(path.join(dir, "script.json"), JSON.stringify(script));
  const results = scriptedToolResults(
    relay,
    path.join(dir, "script.json"),
    ["-a", "untrusted", "-s", "danger-full-access", "-C", ws, "go"],
    { cwd: ws, env },
  );
  const outputs = results.map((e) => e.output ?? "");
  assert.equal(outputs.length, 2, JSON.stringify(results));
  assert.match(outputs[0]!, /grammar-ok/);
  assert.match(
    outputs[1]!,
    /needs the user's approval \(approval policy untrusted\), but relay is not running on a terminal/,
  );
  assert.ok(existsSync(path.join(ws, "keep.txt")), "the command that asks did not run");
}

/** A `tool_result` event of `relay run --json`. */
export interface ToolResultEvent {
  type: "tool_result";
  name?: string;
  output?: string;
  success?: boolean;
}

/** `relay run --script <script> --json <args>` on `relay`: it must exit 0; its tool results, in order. */
export function scriptedToolResults(
  relay: string,
  script: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): ToolResultEvent[] {
  const r = spawnSync(relay, ["run", "--script", script, "--json", ...args], { ...options, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { type: string })
    .filter((e): e is ToolResultEvent => e.type === "tool_result");
}

/** A copy of the binary alone in `dir`, as a download would leave it. */
export function loneCopy(bin: string, dir: string): string {
  const lone = path.join(dir, "relay");
  mkdirSync(dir);
  copyFileSync(bin, lone);
  chmodSync(lone, 0o755);
  return lone;
}

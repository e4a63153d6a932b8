/**
 * What a session starts: a command on a PTY, the executor (and the process containment it
 * reports), the code-mode host, and git. The executor and the host are started as a session
 * would start them, and must answer.
 */
import { spawnSync } from "node:child_process";
import os from "node:os";
import type { RelayConfig } from "../config/config.ts";
import { CodeModeMethods } from "../contracts/code-mode.ts";
import { ExecutorMethods } from "../contracts/executor.ts";
import { ptySupported, spawnProcess } from "../process/spawn/index.ts";
import { type ChildPeer, spawnPeer, spawnSelf } from "../protocol/child.ts";
import { resolveHostProgram } from "../protocol/code-mode-host-program.ts";
import type { Result } from "../util/result.ts";
import { check, type DoctorCheck, stringEnv } from "./check.ts";

// ---- pty ----------------------------------------------------------------------------------------

export async function ptyCheck(env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  const name = "pty";
  const fix = "run the compiled relay binary (or relay under bun); tty=true commands are refused without a PTY";
  if (!ptySupported()) return check(name, "missing", "this runtime has no PTY support", true, fix);
  const started = spawnProcess({
    argv: ["sh", "-c", "printf ok"],
    cwd: os.tmpdir(),
    env: { TERM: "dumb", ...stringEnv(env) },
    tty: true,
  });
  if ("error" in started) return check(name, "missing", started.error.message, true, fix);
  const proc = started.ok;
  let output = "";
  let sawOk!: () => void;
  const gotOk = new Promise<void>((r) => (sawOk = r));
  proc.onData((chunk) => {
    output += Buffer.from(chunk).toString("utf8");
    if (output.includes("ok")) sawOk();
  });
  const exit = await proc.exited;
  // The last bytes may be delivered after the exit status: wait until the terminal closed.
  await Promise.race([gotOk, proc.outputClosed]);
  if (exit.code !== 0)
    return check(
      name,
      "missing",
      `a test command on a PTY exited with ${exit.code}${exit.signal ? ` (${exit.signal})` : ""}`,
      true,
      fix,
    );
  if (!output.includes("ok"))
    return check(
      name,
      "missing",
      `a test command on a PTY printed ${JSON.stringify(output.slice(0, 200))} instead of "ok"`,
      true,
      fix,
    );
  return check(name, "ok", `a test command ran on a PTY (pid ${proc.pid})`, true);
}

// ---- children: executor and code-mode host ----------------------------------------------------

async function withChild<T>(
  child: Result<ChildPeer>,
  use: (c: ChildPeer) => Promise<T>,
): Promise<T | { error: string }> {
  if ("error" in child) return { error: child.error.message };
  try {
    return await use(child.ok);
  } finally {
    await child.ok.shutdown();
  }
}

/** The local executor's line, and the process-containment line from what it reports. */
export async function executorChecks(
  env: NodeJS.ProcessEnv,
  config: RelayConfig,
  timeoutMs: number,
): Promise<[DoctorCheck, DoctorCheck]> {
  const name = "executor";
  const remote = config.executor
    ? `; config executor = ${JSON.stringify(config.executor)} is not started here (relay executor --check --executor '...' checks it)`
    : "";
  const r = await withChild(spawnSelf("executor", [], { name: "executor", env }), async (c) => {
    const info = await c.peer.call(ExecutorMethods.info, {}, { timeoutMs });
    return "error" in info ? { error: info.error.message } : info.ok;
  });
  if ("error" in r) {
    const why = `relay executor did not answer executor/info: ${r.error}${remote}`;
    return [
      check(
        name,
        "missing",
        why,
        true,
        "run relay executor --check for details; set RELAY_SELF_COMMAND if relay cannot re-run itself",
      ),
      check("containment", "warn", `not known: ${why}`, false),
    ];
  }
  const executor = check(
    name,
    "ok",
    `relay ${r.version} (${r.runtime}, ${r.platform}/${r.arch}, pid ${r.pid})${remote}`,
    true,
  );
  const c = r.sandbox.containment;
  if (!c) return [executor, check("containment", "warn", "this executor does not report it", false)];
  return [
    executor,
    c.enforced ? check("containment", "ok", c.detail, false) : check("containment", "warn", c.detail, false),
  ];
}

export async function codeModeCheck(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const name = "code-mode host";
  const program = resolveHostProgram(env);
  const which =
    program.kind === "path"
      ? `${program.path} (from ${program.source === "env" ? "RELAY_CODE_MODE_HOST_PATH" : program.source === "sibling" ? "next to relay" : "PATH"})`
      : "relay code-mode-host";
  const child =
    program.kind === "path"
      ? spawnPeer([program.path], { name: "code-mode-host", env })
      : spawnSelf("code-mode-host", [], { name: "code-mode-host", env });
  const r = await withChild(child, async (c) => {
    const hello = await c.peer.call(CodeModeMethods.hello, {}, { timeoutMs });
    return "error" in hello ? { error: hello.error.message } : hello.ok;
  });
  if ("error" in r)
    return check(
      name,
      "missing",
      `${which} did not answer codemode/hello: ${r.error}`,
      true,
      "relay run --code-mode needs it; check RELAY_CODE_MODE_HOST_PATH or the relay install",
    );
  return check(name, "ok", `${which}: QuickJS loaded (pid ${r.pid})`, true);
}

// ---- git ----------------------------------------------------------------------------------------

export function gitCheck(env: NodeJS.ProcessEnv): DoctorCheck {
  const name = "git";
  const r = spawnSync("git", ["--version"], { env, encoding: "utf8", timeout: 10_000 });
  if (r.status === 0) return check(name, "ok", r.stdout.trim(), false);
  const why = r.error
    ? (r.error as NodeJS.ErrnoException).code === "ENOENT"
      ? "not found on PATH"
      : r.error.message
    : `git --version exited ${r.status}`;
  return check(name, "warn", `${why}: memories' baseline and git-aware tools need it`, false, "install git");
}

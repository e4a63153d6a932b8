/** `relay executor --check`: start an executor (local or any command line), report what it offers. */
import { ExecutorMethods } from "../contracts/executor.ts";
import { spawnCommandLine, spawnSelf } from "../protocol/child.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { ExitCode } from "./usage.ts";

/** One command under the read-only sandbox: proves the default path works on this host. */
async function sandboxedCommand(
  peer: RpcPeer,
): Promise<{ output: string; exit_code: number | undefined; ms: number } | { error: string }> {
  const t = performance.now();
  const r = await peer.call(ExecutorMethods.exec, {
    command: ["sh", "-c", "echo ok"],
    cwd: "/",
    env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
    sandbox: { mode: "read-only", writable_roots: [], network: false },
  });
  if ("error" in r) return { error: r.error.message };
  return { output: r.ok.output.trim(), exit_code: r.ok.exit_code, ms: performance.now() - t };
}

export async function checkExecutor(commandLine: string | undefined, json: boolean): Promise<number> {
  const child = commandLine
    ? spawnCommandLine(commandLine, { name: "executor" })
    : spawnSelf("executor", [], { name: "executor" });
  if ("error" in child) {
    process.stderr.write(`relay: ${child.error.message}\n`);
    return ExitCode.Usage;
  }
  const ex = child.ok;
  try {
    const info = await ex.peer.call(ExecutorMethods.info, {}, { timeoutMs: 30_000 });
    if ("error" in info) throw new Error(info.error.message);
    const tools = await ex.peer.call(ExecutorMethods.toolsList, {});
    if ("error" in tools) throw new Error(tools.error.message);
    const t = performance.now();
    const run = await ex.peer.call(ExecutorMethods.exec, {
      command: ["sh", "-c", "echo ok from $(uname -n)"],
      cwd: "/",
      env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
    });
    if ("error" in run) throw new Error(`running a test command failed: ${run.error.message}`);
    const ms = performance.now() - t;
    const confined = await sandboxedCommand(ex.peer);
    if (json) {
      process.stdout.write(
        JSON.stringify({
          info: info.ok,
          tools: tools.ok.tools.map((x) => x.name),
          test_command: { output: run.ok.output, exit_code: run.ok.exit_code, ms },
          sandboxed_command: confined,
        }) + "\n",
      );
    } else {
      const i = info.ok;
      process.stdout.write(
        [
          `executor: relay ${i.version} on ${i.hostname} (${i.platform}/${i.arch}, ${i.runtime}, pid ${i.pid})`,
          `pty: ${i.pty ? "yes" : "no (tty=true commands will be refused)"}`,
          `sandbox: ${i.sandbox.available ? i.sandbox.detail : `unavailable: ${i.sandbox.detail}`}`,
          `tools: ${tools.ok.tools.map((x) => x.name).join(", ")}`,
          `test command: ${run.ok.output.trim()} (exit ${run.ok.exit_code}, ${ms.toFixed(1)} ms)`,
          "error" in confined
            ? `sandboxed test command: refused: ${confined.error}`
            : `sandboxed test command (read-only): ${confined.output} (exit ${confined.exit_code}, ${confined.ms.toFixed(1)} ms)`,
        ].join("\n") + "\n",
      );
    }
    return run.ok.exit_code === 0 && !("error" in confined) && confined.exit_code === 0
      ? ExitCode.Ok
      : ExitCode.Failure;
  } catch (e) {
    process.stderr.write(`relay: executor check failed: ${(e as Error).message}\n`);
    return ExitCode.Failure;
  } finally {
    await ex.shutdown();
  }
}

/**
 * Pipe-mode children: stdin is /dev/null from the start (a command waiting for input ends
 * instead of hanging), stdout and stderr merge into one stream, and the child leads its own
 * process group so the whole tree can be signalled.
 */
import { spawn } from "node:child_process";
import { bunSpawn } from "../../util/bun-spawn.ts";
import { err, type Result } from "../../util/result.ts";
import { outputFanout } from "./output-fanout.ts";
import { spawnPipesBun } from "./pipes-bun.ts";
import { exitCodeFor } from "./signals.ts";
import type { ControlledProcess, ProcessExit, RunningProcess, SpawnErrorCode, SpawnRequest } from "./types.ts";

export type { ControlledProcess } from "./types.ts";

export function spawnPipes(req: SpawnRequest): Result<RunningProcess, SpawnErrorCode>;
export function spawnPipes(req: SpawnRequest, control: true): Result<ControlledProcess, SpawnErrorCode>;
export function spawnPipes(
  req: SpawnRequest,
  control = false,
): Result<RunningProcess | ControlledProcess, SpawnErrorCode> {
  const bun = bunSpawn();
  return bun ? spawnPipesBun(bun, req, control) : spawnPipesNode(req, control);
}

/** node:child_process, for Node and Deno (and a test of both paths under Bun). */
export function spawnPipesNode(req: SpawnRequest, control: boolean): Result<ControlledProcess, SpawnErrorCode> {
  let child;
  try {
    child = spawn(req.argv[0]!, req.argv.slice(1), {
      cwd: req.cwd,
      env: req.env,
      stdio: [control ? "pipe" : "ignore", "pipe", "pipe"],
      detached: true,
    });
  } catch (e) {
    return err("spawn_failed", `could not start ${JSON.stringify(req.argv[0])}: ${(e as Error).message}`);
  }
  const output = outputFanout();
  child.stdout!.on("data", output.emit);
  child.stderr!.on("data", output.emit);
  let spawnError: Error | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code: exitCodeFor(code, signal), signal }));
    child.once("error", (e) => {
      spawnError = e;
      resolve({ code: -1, signal: null });
    });
  });
  const ended = (s: NodeJS.ReadableStream) =>
    new Promise<void>((r) => (s.once("close", r), s.once("error", () => r())));
  const outputClosed = Promise.all([ended(child.stdout!), ended(child.stderr!)]).then(() => undefined);
  if (child.pid === undefined) {
    // Node reports spawn failures (ENOENT, EACCES) asynchronously through "error".
    return err(
      "spawn_failed",
      `could not start ${JSON.stringify(req.argv[0])}: ${spawnError?.message ?? "no such file or not executable"}`,
    );
  }
  return {
    ok: {
      pid: child.pid,
      tty: false,
      onData: output.onData,
      exited,
      outputClosed,
      write: () =>
        err("stdin_closed", "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"),
      sendAndClose(text: string) {
        child.stdin?.on("error", () => {});
        child.stdin?.end(text);
      },
    },
  };
}

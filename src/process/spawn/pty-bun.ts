/** PTY children through Bun's built-in terminal support (POSIX; no native library needed). */
import { err, ok, type Result } from "../../util/result.ts";
import { outputFanout } from "./output-fanout.ts";
import { exitCodeFor } from "./signals.ts";
import type { ProcessExit, RunningProcess, SpawnErrorCode, SpawnRequest } from "./types.ts";

interface BunTerminal {
  write(data: string | Uint8Array): number;
}
interface BunSubprocess {
  pid: number;
  exited: Promise<number>;
  exitCode: number | null;
  signalCode: string | null;
  terminal?: BunTerminal;
}
interface BunLike {
  spawn(argv: string[], options: Record<string, unknown>): BunSubprocess;
}

export function bunPtyAvailable(): boolean {
  const bun = (globalThis as { Bun?: unknown }).Bun;
  return Boolean(bun) && process.platform !== "win32";
}

export function spawnBunPty(req: SpawnRequest): Result<RunningProcess, SpawnErrorCode> {
  const bun = (globalThis as unknown as { Bun: BunLike }).Bun;
  const output = outputFanout();
  let closeOutput!: () => void;
  const outputClosed = new Promise<void>((r) => (closeOutput = r));
  let proc: BunSubprocess;
  try {
    proc = bun.spawn(req.argv, {
      cwd: req.cwd,
      env: req.env,
      terminal: {
        cols: req.cols ?? 80,
        rows: req.rows ?? 24,
        name: req.env.TERM ?? "dumb",
        data(_t: unknown, bytes: Uint8Array) {
          output.emit(bytes);
        },
        exit() {
          closeOutput();
        },
      },
    });
  } catch (e) {
    return err("spawn_failed", `could not start ${JSON.stringify(req.argv[0])}: ${(e as Error).message}`);
  }
  const exited: Promise<ProcessExit> = proc.exited.then(() => ({
    code: exitCodeFor(proc.exitCode, proc.signalCode),
    signal: proc.signalCode,
  }));
  return ok({
    pid: proc.pid,
    tty: true,
    onData: output.onData,
    exited,
    outputClosed,
    write(data) {
      try {
        proc.terminal!.write(data);
        return ok(null);
      } catch (e) {
        return err("write_failed", `failed to write to stdin: ${(e as Error).message}`);
      }
    },
  });
}

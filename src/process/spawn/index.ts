/** Picks the spawn backend: a PTY where the runtime has one, pipes otherwise. */

import { err, type Result } from "../../util/result.ts";
import { currentRuntime } from "../../util/runtime.ts";
import { spawnPipes } from "./pipes.ts";
import { bunPtyAvailable, spawnBunPty } from "./pty-bun.ts";
import type { RunningProcess, SpawnErrorCode, SpawnRequest } from "./types.ts";

export { type OutputFanout, outputFanout, pumpInto } from "./output-fanout.ts";
export { spawnPipes } from "./pipes.ts";
export { exitOfWaitStatus } from "./signals.ts";
export type {
  ControlledProcess,
  ProcessExit,
  RunningProcess,
  SpawnErrorCode,
  SpawnRequest,
  WriteErrorCode,
} from "./types.ts";

export function ptySupported(): boolean {
  return bunPtyAvailable();
}

export function spawnProcess(req: SpawnRequest): Result<RunningProcess, SpawnErrorCode> {
  if (req.argv.length === 0) return err("invalid_request", "missing command line: argv is empty");
  if (!req.tty) return spawnPipes(req);
  if (!bunPtyAvailable()) {
    return err(
      "tty_unavailable",
      `tty=true needs a PTY, which relay running on ${currentRuntime()} (${process.platform}) cannot provide; run the executor from the compiled relay binary or under Bun, or rerun with tty=false`,
    );
  }
  return spawnBunPty(req);
}

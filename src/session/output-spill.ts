/**
 * "Big outputs are kept, not lost": the full text of a tool result that was cut for the model
 * goes to a private file next to the session's rollout
 * (`rollout-….outputs/<call-id>.txt`), and the model is told where it is and how to read the
 * part it did not see.
 */
import { Buffer } from "node:buffer";
import { chmod, mkdir, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_READ_LIMIT } from "../contracts/exec-tools.ts";
import { ExecutorMethods, type FullOutputInfo } from "../contracts/executor.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";

export const OUTPUTS_DIR_MODE = 0o700;
export const OUTPUT_FILE_MODE = 0o600;

/** `…/rollout-<time>-<uuid>.jsonl` → `…/rollout-<time>-<uuid>.outputs` */
export function outputsDir(rolloutPath: string): string {
  return `${rolloutPath.replace(/\.jsonl$/, "")}.outputs`;
}

export interface SavedOutput {
  path: string;
  bytes: number;
  lines: number;
}

/** Where a session's full outputs go; the directory is made on the first one. */
export class OutputSpill {
  constructor(
    readonly dir: string,
    /** Whether the session's tools can open the files (the executor runs on this host). */
    readonly readableByTools: boolean,
  ) {}

  /** Writes `data` to `<dir>/<call-id>.txt`, private to the user. */
  async save(callId: string, data: Buffer): Promise<Result<SavedOutput>> {
    const file = path.join(this.dir, `${fileStem(callId)}.txt`);
    try {
      await mkdir(this.dir, { recursive: true, mode: OUTPUTS_DIR_MODE });
      // mkdir's mode is cut by the umask and does not apply to an existing directory.
      await chmod(this.dir, OUTPUTS_DIR_MODE).catch(() => undefined);
      await writeFile(file, data, { mode: OUTPUT_FILE_MODE });
      await chmod(file, OUTPUT_FILE_MODE).catch(() => undefined);
    } catch (e) {
      // A part of the output must not pass for all of it (a full disk stops writeFile mid-way).
      await unlink(file).catch(() => undefined);
      return err("output_not_saved", `the full output could not be saved to ${file}: ${errorMessage(e)}`);
    }
    return ok({ path: file, bytes: data.length, lines: countLines(data) });
  }
}

/** Reads a full output the executor holds (`process/read_output`), piece by piece. */
export async function fetchFullOutput(
  peer: RpcPeer,
  info: FullOutputInfo,
  signal?: AbortSignal,
): Promise<Result<Buffer>> {
  const pieces: Buffer[] = [];
  for (let offset = 0; ; ) {
    const r = await peer.call(ExecutorMethods.readOutput, { id: info.id, offset }, { signal });
    if ("error" in r) return err("output_not_saved", `the executor could not send the full output: ${r.error.message}`);
    pieces.push(Buffer.from(r.ok.data_base64, "base64"));
    if (r.ok.done) return ok(Buffer.concat(pieces));
    offset = r.ok.next_offset;
  }
}

/** The line the model reads above a cut output: where the rest is and how to read it. */
export function fullOutputNote(saved: SavedOutput, info: FullOutputInfo, readableByTools: boolean): string {
  const size = `${saved.lines} lines, ${formatBytes(saved.bytes)}`;
  const dropped =
    info.dropped_bytes > 0
      ? ` It is not complete either: the executor keeps at most ${formatBytes(info.limit_bytes)} of output, so ${info.dropped_bytes} bytes are missing where a marker line says so.`
      : "";
  const { from, to } = info.cut_lines;
  if (!readableByTools) {
    return `Full output (${size}) saved on the host relay runs on, not on this executor, so your tools cannot open it: ${saved.path}. The output below leaves out lines ${from}-${to}; rerun the command with less output (grep, head, tail, sed -n) to see them.${dropped}`;
  }
  const limit = Math.min(DEFAULT_READ_LIMIT, to - from + 1);
  return `Full output (${size}) saved to ${saved.path}. The output below leaves out lines ${from}-${to}; read them with read_file {"file_path": ${JSON.stringify(saved.path)}, "offset": ${from}, "limit": ${limit}} (then the next offset), or search it with exec_command (grep -n PATTERN FILE).${dropped}`;
}

/** A call id as a file name: only [A-Za-z0-9._-], never empty or a dot name. */
function fileStem(callId: string): string {
  const stem = callId.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120);
  return /^\.*$/.test(stem) ? `output${stem.length}` : stem;
}

function countLines(data: Buffer): number {
  if (data.length === 0) return 0;
  let n = 0;
  for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) n++;
  return data[data.length - 1] === 10 ? n : n + 1;
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${Math.round((n / (1024 * 1024)) * 10) / 10} MiB`;
  if (n >= 1024) return `${Math.round((n / 1024) * 10) / 10} KiB`;
  return `${n} bytes`;
}

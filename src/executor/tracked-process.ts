/**
 * One process the manager tracks: its record (the 1 MiB head+tail buffer, the keep_full_output
 * spool, its exit), waiting on it for output or exit, and what a poll of it returns. Every poll
 * drains what it returns, so output is never repeated.
 */

import { Buffer } from "node:buffer";
import type { ExecResult } from "../contracts/executor.ts";
import type { ProcessExit, RunningProcess } from "../process/spawn/index.ts";
import { randomHex } from "../util/random.ts";
import { truncateMiddle } from "../util/truncate.ts";
import { type FullOutputStore, type OutputSpool, spooledPieces } from "./full-output.ts";
import type { HeadTailBuffer } from "./head-tail-buffer.ts";
import * as L from "./limits.ts";
import { renderTerminalText, splitUtf8Tail } from "./render-output.ts";

export interface Entry {
  id: number;
  proc: RunningProcess;
  command: string[];
  cwd: string;
  tty: boolean;
  startedAt: Date;
  lastUsed: number;
  lastUsedAt: Date;
  buffer: HeadTailBuffer;
  /** keep_full_output: the output the buffer could not hold. */
  spool?: OutputSpool;
  /** Incomplete UTF-8 bytes held back from the previous drain. */
  utf8Rest: Uint8Array;
  exit?: ProcessExit;
  outputDone: boolean;
  /** Wakes a collector waiting for output or exit. */
  wake?: () => void;
}

/** Waits until the deadline, or until the process has exited and its output has drained. */
export async function collect(entry: Entry, deadline: number): Promise<void> {
  for (;;) {
    if (entry.exit) {
      if (!entry.outputDone)
        await waitForEvent(entry, Math.min(deadline, performance.now() + L.TRAILING_OUTPUT_GRACE_MS));
      return;
    }
    const now = performance.now();
    if (now >= deadline) return;
    await waitForEvent(entry, deadline);
  }
}

function waitForEvent(entry: Entry, until: number): Promise<void> {
  const ms = Math.max(0, until - performance.now());
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      entry.wake = undefined;
      resolve();
    }
    // Output alone does not end a wait: only exit, stream close or the deadline do.
    entry.wake = () => {
      if (entry.exit) done();
    };
  });
}

/** What a poll of `entry` returns; a full output kept with keep_full_output is held in `fullOutputs`. */
export function pollResult(
  entry: Entry,
  started: number,
  maxTokens: number | undefined,
  running: boolean,
  fullOutputs: FullOutputStore,
): ExecResult {
  const { text, gapBytes } = takeOutput(entry, running, fullOutputs);
  const t = truncateMiddle(text, maxTokens ?? L.DEFAULT_MAX_OUTPUT_TOKENS);
  const full =
    entry.spool && t.truncated && t.cutLines ? { ...fullOutputs.hold(text), cut_lines: t.cutLines } : undefined;
  return {
    chunk_id: randomHex(3),
    wall_time_seconds: Math.round(performance.now() - started) / 1000,
    ...(entry.exit ? { exit_code: entry.exit.code } : {}),
    ...(running ? { process_id: entry.id } : {}),
    original_token_count: t.originalTokens,
    total_lines: t.totalLines,
    truncated: t.truncated,
    omitted_bytes: gapBytes,
    output: t.text,
    ...(full ? { full_output: { ...full, dropped_bytes: gapBytes, limit_bytes: fullOutputs.limitBytes } } : {}),
  };
}

/**
 * What this poll returns, as text: the buffer's head and tail (a marker where it dropped
 * bytes), or with keep_full_output the whole output since the last poll.
 */
function takeOutput(entry: Entry, running: boolean, fullOutputs: FullOutputStore): { text: string; gapBytes: number } {
  const drained = entry.buffer.drain();
  const held = entry.utf8Rest;
  let bytes: Uint8Array = held.length ? Buffer.concat([held, drained.bytes]) : drained.bytes;
  entry.utf8Rest = new Uint8Array(0);
  if (running) {
    const split = splitUtf8Tail(bytes);
    bytes = split.complete;
    entry.utf8Rest = split.rest;
  }
  const spooled = entry.spool?.take();
  if (spooled) {
    const p = spooledPieces(held, spooled, drained.bytes.subarray(drained.headBytes), entry.utf8Rest.length);
    return {
      text: withGap(p.head, p.tail, p.gapBytes, `the ${fullOutputs.limitBytes / (1024 * 1024)} MiB kept in full`),
      gapBytes: p.gapBytes,
    };
  }
  // The gap is exactly where the buffer dropped bytes: between its head and its tail.
  const cut = Math.min(bytes.length, held.length + drained.headBytes);
  return {
    text: withGap(bytes.subarray(0, cut), bytes.subarray(cut), drained.omittedBytes, "the 1 MiB buffer"),
    gapBytes: drained.omittedBytes,
  };
}

/** Head and tail as text; where `gapBytes` were dropped between them, a line that says so. */
function withGap(head: Uint8Array, tail: Uint8Array, gapBytes: number, over: string): string {
  const decode = (b: Uint8Array) => renderTerminalText(Buffer.from(b).toString("utf8"));
  if (gapBytes === 0) return decode(Buffer.concat([head, tail]));
  return `${decode(head)}\n[… ${gapBytes} bytes of output were dropped here (over ${over}) …]\n${decode(tail)}`;
}

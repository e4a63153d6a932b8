/**
 * Forking a session: a new rollout (new id, new file) whose session_meta names the source
 * (`forked_from_id`, `forked_from_path`) and which then holds a copy of the source's lines, so
 * the fork reads back, resumes and lists like any session. The source file is only read.
 */
import { rm } from "node:fs/promises";
import { isErr, type Result } from "../util/result.ts";
import { isKnownLineType, type RolloutLine } from "./schema.ts";
import { type NewSessionMeta, type RolloutLineInput, RolloutWriter } from "./writer.ts";

export interface ForkSource {
  id: string;
  path: string;
  /** Lines in the source file when it was read (torn or unknown ones included). */
  lineCount: number;
  /** The source's usable lines, in order (from readRollout). */
  lines: readonly RolloutLine[];
}

export async function forkRollout(o: {
  home: string;
  source: ForkSource;
  meta: NewSessionMeta;
  now?: Date;
}): Promise<Result<RolloutWriter>> {
  const created = await RolloutWriter.create({
    home: o.home,
    meta: {
      ...o.meta,
      forked_from_id: o.source.id,
      forked_from_path: o.source.path,
      forked_from_lines: o.source.lineCount,
    },
    now: o.now,
  });
  if (isErr(created)) return created;
  const copied = await created.ok.append(historyLines(o.source.lines));
  if (isErr(copied)) {
    // A fork without its history would resume as something else: leave no such file behind.
    await created.ok.close();
    await rm(created.ok.path, { force: true });
    return copied;
  }
  return created;
}

/**
 * The lines a fork copies, with their own timestamps: everything but the source's session_meta
 * (the fork has its own) and line types Relay does not know (the writer takes known types only).
 */
export function historyLines(lines: readonly RolloutLine[]): RolloutLineInput[] {
  return lines
    .filter((l) => l.type !== "session_meta" && isKnownLineType(l.type))
    .map((l) => ({ timestamp: l.timestamp, type: l.type, payload: l.payload }) as RolloutLineInput);
}

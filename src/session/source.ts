/**
 * The saved session a run starts from: `resume` appends to that session's own rollout; `fork`
 * starts a new session (new id, new rollout) with a copy of its history and leaves the source
 * file as it was. Either way the history, the cwd and the recorded settings carry over. Relay
 * never writes into a file it did not create: resuming another program's rollout (Codex's) is
 * a fork, so that program can still resume its own session afterwards.
 */

import type { EmitEvent } from "../contracts/events.ts";
import type { ResponseItem } from "../model/items.ts";
import { findRollout } from "../rollout/find.ts";
import { type ForkSource, forkRollout } from "../rollout/fork.ts";
import { readRollout } from "../rollout/reader.ts";
import { INFTY_SOURCE, isRoleSession, roleSessionRefusal } from "../rollout/schema.ts";
import { type NewSessionMeta, RELAY_ORIGINATOR, RolloutWriter } from "../rollout/writer.ts";
import { err, ok, type Result } from "../util/result.ts";
import { pendingWorkIn } from "./agent.ts";

/** A rollout being resumed or forked: where it is, its history and its cwd. */
export interface Resumed {
  path: string;
  items: ResponseItem[];
  cwd: string;
  /** Set for a fork: the new session copies these lines. */
  fork?: ForkSource;
}

export interface SourceOptions {
  home: string;
  /** A session id, unique id prefix, `last`, or a rollout path. */
  resume?: string;
  fork?: string;
  /** The prompt of the first turn; without one a fork needs an unfinished turn to continue. */
  firstPrompt?: string;
  /** The new session's source: only an infty run (`infty`) may continue its roles' sessions. */
  source?: string;
  emit: EmitEvent;
}

export const LIST_HINT = "`relay sessions list`";

export async function findSource(o: SourceOptions): Promise<Result<Resumed | undefined>> {
  if (o.resume !== undefined && o.fork !== undefined)
    return err(
      "usage",
      "--resume and --fork cannot be combined: resume continues a session in place, fork starts a new one from it",
    );
  const id = o.resume ?? o.fork;
  if (id === undefined) return ok(undefined);
  const found = await findRollout(o.home, id, { listHint: LIST_HINT });
  if ("error" in found) return found;
  const r = await readRollout(found.ok.path);
  if ("error" in r) return r;
  // An infty role's session is driven by its run; continuing it here would write into the run.
  if (isRoleSession(r.ok.meta) && o.source !== INFTY_SOURCE)
    return err("session_of_infty_run", roleSessionRefusal({ id: r.ok.meta.id, infty: r.ok.meta.infty }));
  for (const w of r.ok.warnings) o.emit({ type: "warning", message: w });
  const resumed: Resumed = { path: found.ok.path, items: r.ok.items, cwd: String(r.ok.meta.cwd) };
  const foreign = r.ok.meta.originator !== RELAY_ORIGINATOR;
  if (o.fork === undefined && !foreign) return ok(resumed);
  // Checked before the fork's file exists, so that a fork with nothing to do leaves none.
  if (o.firstPrompt === undefined && pendingWorkIn(r.ok.items) === "none") {
    const flag = o.fork === undefined ? "--resume" : "--fork";
    return err(
      "nothing_to_resume",
      `session ${r.ok.meta.id} has no unfinished turn; give the ${o.fork === undefined ? "session" : "fork"} a prompt: relay run ${flag} ${r.ok.meta.id} "next request"`,
    );
  }
  if (o.fork === undefined) {
    o.emit({
      type: "warning",
      message: `${found.ok.path} was written by ${r.ok.meta.originator}, not Relay: it stays as it is (so ${r.ok.meta.originator} can still resume it), and Relay continues the conversation in a new session forked from it`,
    });
  }
  return ok({
    ...resumed,
    fork: { id: r.ok.meta.id, path: found.ok.path, lines: r.ok.lines, lineCount: r.ok.lineCount },
  });
}

/** The session's rollout: a new one, the resumed one reopened, or a fork of the source. */
export function openSourceRollout(
  home: string,
  resumed: Resumed | undefined,
  meta: NewSessionMeta,
  dir?: string,
): Promise<Result<RolloutWriter>> {
  if (resumed?.fork) return forkRollout({ home, source: resumed.fork, meta });
  if (resumed) return RolloutWriter.resume(resumed.path);
  return RolloutWriter.create({ home, meta, ...(dir ? { dir } : {}) });
}

/**
 * What a person does to a run from outside it: stop it (SIGTERM to the process driving it, which
 * ends the current step and leaves the run interrupted and resumable, as Ctrl-C does), resume it
 * (`relay infty resume <id>` started detached, its output in $RELAY_HOME/logs), and leave a note
 * for the Director (memory/operator-notes.jsonl, read with its next direction request). The CLI
 * (`relay infty stop`, `relay infty note`, `relay infty resume`) and `relay infty serve
 * --allow-actions` both come here; each action is recorded in events.jsonl. Nothing here writes
 * run.json: the process that drives the run owns it.
 */
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { logsDir } from "../home/home.ts";
import { selfCommand } from "../protocol/child.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { appendLine, readJsonl } from "./durable.ts";
import { runLiveness } from "./liveness.ts";
import { RunStore } from "./run-store.ts";

export const OperatorNoteSchema = lazySchema(() =>
  z.object({ id: z.string(), at: z.string(), text: z.string(), from: z.string() }),
);
export type OperatorNote = z.infer<typeof OperatorNoteSchema>;

/** A note's longest text. */
export const MAX_NOTE_CHARS = 4000;

export const operatorNotesFile = (runDir: string) => path.join(runDir, "memory", "operator-notes.jsonl");

export function readOperatorNotes(runDir: string): Promise<OperatorNote[]> {
  return readJsonl(operatorNotesFile(runDir), OperatorNoteSchema);
}

export interface Done {
  action: string;
  message: string;
}

/** Stops a live run the way Ctrl-C does; `who` says where the stop came from (for the log). */
export async function stopRun(home: string, runId: string, who: string): Promise<Result<Done>> {
  const loaded = await RunStore.load(home, runId);
  if ("error" in loaded) return loaded;
  const store = loaded.ok;
  const l = await runLiveness(store.dir, store.state);
  if (!l.live)
    return err(
      "conflict",
      `run ${runId} is not running (status ${store.state.status}${store.state.status === "running" ? `, no heartbeat for ${Math.round(l.heartbeatAgeMs / 1000)} s` : ""}); nothing to stop`,
    );
  if (l.pid === undefined)
    return err("conflict", `run ${runId} is live but its log names no process; press Ctrl-C where it runs`);
  try {
    process.kill(l.pid, "SIGTERM");
  } catch (e) {
    return err("stop_failed", `could not signal pid ${l.pid} of run ${runId}: ${(e as Error).message}`);
  }
  await store.log({ type: "operator", action: "stop", text: `SIGTERM to pid ${l.pid} (${who})` });
  return ok({
    action: "stop",
    message: `asked run ${runId} (pid ${l.pid}) to stop after its current step; it stays resumable`,
  });
}

/** Starts `relay infty resume <id>` detached (as the CLI would be run); its output goes to a log file. */
export async function resumeDetached(
  home: string,
  runId: string,
  who: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Result<Done & { pid: number; log: string }>> {
  const loaded = await RunStore.load(home, runId);
  if ("error" in loaded) return loaded;
  const store = loaded.ok;
  const l = await runLiveness(store.dir, store.state);
  if (l.live) return err("conflict", `run ${runId} is already running${l.pid ? ` (pid ${l.pid})` : ""}`);
  const self = selfCommand();
  if ("error" in self) return self;
  mkdirSync(logsDir(home), { recursive: true });
  const log = path.join(logsDir(home), `infty-resume-${runId}.log`);
  const fd = openSync(log, "a");
  try {
    const [cmd, ...pre] = self.ok;
    const child = spawn(cmd!, [...pre, "infty", "resume", runId], {
      env: { ...env, RELAY_HOME: home },
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    child.once("error", () => {});
    child.unref();
    if (child.pid === undefined)
      return err(
        "resume_failed",
        `could not start ${cmd} infty resume ${runId}; run it yourself: relay infty resume ${runId}`,
      );
    await store.log({
      type: "operator",
      action: "resume",
      text: `relay infty resume started as pid ${child.pid} (${who}); output in ${log}`,
    });
    return ok({
      action: "resume",
      message: `resuming run ${runId} (pid ${child.pid}); its output goes to ${log}`,
      pid: child.pid,
      log,
    });
  } finally {
    closeSync(fd);
  }
}

/** A note's text, trimmed; refused when empty or too long. */
export function noteText(text: string): Result<string> {
  const t = text.trim();
  if (!t) return err("bad_request", "a note needs some text");
  if (t.length > MAX_NOTE_CHARS)
    return err(
      "bad_request",
      `a note has at most ${MAX_NOTE_CHARS} characters (this one has ${t.length}); shorten it or put the rest in a file under artifacts/`,
    );
  return ok(t);
}

/** Leaves a note for the Director; it is sent with the Director's next direction request. */
export async function noteForDirector(home: string, runId: string, text: string, who: string): Promise<Result<Done>> {
  const checked = noteText(text);
  if ("error" in checked) return checked;
  const t = checked.ok;
  const loaded = await RunStore.load(home, runId);
  if ("error" in loaded) return loaded;
  const store = loaded.ok;
  if (store.state.status === "complete")
    return err("conflict", `run ${runId} is complete; no Director will read a note`);
  const notes = await readOperatorNotes(store.dir);
  const note: OperatorNote = {
    id: `op-${String(notes.length + 1).padStart(4, "0")}`,
    at: new Date().toISOString(),
    text: t,
    from: who,
  };
  await appendLine(operatorNotesFile(store.dir), JSON.stringify(note));
  await store.log({ type: "operator", action: "note", text: t });
  return ok({
    action: "note",
    message: `note ${note.id} left for the Director of run ${runId}; it goes with the next direction request`,
  });
}

/**
 * The page's actions (`--allow-actions`): stop, resume and a note to the Director, through the
 * same code as `relay infty stop`, `relay infty resume` and `relay infty note` (operator.ts).
 */
import path from "node:path";
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { noteForDirector, resumeDetached, stopRun } from "../operator.ts";
import type { ActionHandler } from "./server.ts";

const NoteBodySchema = lazySchema(() => z.object({ text: z.string() }));
const WHO = "relay infty serve";

/** The handler for runs in `root`, which must be a RELAY_HOME's infty/ folder (a resume runs relay with that home). */
export function serveActions(root: string): Result<ActionHandler> {
  if (path.basename(root) !== "infty")
    return err(
      "bad_runs_root",
      `--allow-actions needs the runs root to be a RELAY_HOME's infty folder (${root} is not): a resumed run is started with RELAY_HOME set to its parent; leave out --runs-root or point RELAY_HOME there`,
    );
  const home = path.dirname(root);
  return ok(async (runId, action, body) => {
    if (action === "stop") return stopRun(home, runId, WHO);
    if (action === "resume") {
      const r = await resumeDetached(home, runId, WHO);
      return "error" in r ? r : ok({ action: r.ok.action, message: r.ok.message });
    }
    if (action === "note") {
      const b = NoteBodySchema.safeParse(body);
      if (!b.success) return err("bad_request", 'a note is posted as JSON {"text": "…"}');
      return noteForDirector(home, runId, b.data.text, WHO);
    }
    return err("not_found", `no action ${JSON.stringify(action)}; the actions are stop, resume and note`);
  });
}

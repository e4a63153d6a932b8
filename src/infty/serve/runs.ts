/** The runs under a runs root, as the API shows them: summaries for the list, one run in detail. Reads only. */
import { existsSync } from "node:fs";
import path from "node:path";
import { roleNames } from "../../config/infty/index.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { type Liveness, runLiveness } from "../liveness.ts";
import { type RunMeta, readRunMeta } from "../run-format.ts";
import { RunStore, validateRunId } from "../run-store.ts";
import type { RunDetail, RunList, RunSummary } from "./api-schemas.ts";
import { RunWatch } from "./run-watch.ts";

/** The model a role runs on, as run.json recorded it (older runs: one for all roles). */
function modelOf(m: RunMeta, role: string): string {
  const own = m.settings?.roles?.[role];
  if (own) return `${own.model} (${own.model_provider})`;
  return m.settings ? `${m.settings.model} (${m.settings.model_provider})` : "(not recorded)";
}

export function summaryOf(m: RunMeta, l: Pick<Liveness, "live" | "stale">): RunSummary {
  return {
    id: m.run_id,
    objective: m.objective,
    status: m.status,
    status_detail: m.status_detail,
    live: l.live,
    ...(l.stale ? { stale: l.stale } : {}),
    roles: roleNames(m.verifiers).map((role) => ({ role, model: modelOf(m, role) })),
    created_at: m.created_at,
    updated_at: m.updated_at,
    turns: m.turns,
    max_turns: m.max_turns,
    tokens_used: m.tokens_used,
    max_tokens: m.max_tokens,
    deliverable: m.deliverable !== null,
  };
}

/** The runs root's runs and what the server keeps of each (the event index, the budget fold). */
export class RunRegistry {
  private readonly watches = new Map<string, RunWatch>();

  constructor(
    readonly root: string,
    private readonly actions: boolean,
  ) {}

  /** The folder of run `id`, if it names one. */
  /** `id`, if it can name a run. */
  validId(id: string): Result<string> {
    if ("error" in validateRunId(id))
      return err("run_not_found", `no run ${JSON.stringify(id)}: a run id has letters, digits, '.', '-', '_' only`);
    return ok(id);
  }

  dirOf(id: string): Result<string> {
    const valid = this.validId(id);
    if ("error" in valid) return valid;
    const dir = path.join(this.root, id);
    if (!existsSync(path.join(dir, "run.json")))
      return err("run_not_found", `no run ${id} under ${this.root}; the list is at /api/runs`);
    return ok(dir);
  }

  watch(id: string, dir: string): RunWatch {
    let w = this.watches.get(id);
    if (!w) this.watches.set(id, (w = new RunWatch(dir)));
    return w;
  }

  async list(): Promise<RunList> {
    const { runs, warnings } = await RunStore.listIn(this.root);
    const summaries = await Promise.all(
      runs.map(async (m) => summaryOf(m, await runLiveness(path.join(this.root, m.run_id), m))),
    );
    return { runs: summaries, warnings };
  }

  async detail(id: string): Promise<Result<RunDetail>> {
    const dir = this.dirOf(id);
    if ("error" in dir) return dir;
    const meta = await readRunMeta(dir.ok);
    if ("error" in meta) return meta;
    const m = meta.ok;
    const l = await runLiveness(dir.ok, m);
    const w = this.watch(id, dir.ok);
    await w.budget.update();
    const logged = w.budget.snapshot(l.live);
    // Every role of the run, those the log has not mentioned yet at zero.
    const roles = roleNames(m.verifiers).map(
      (role) => logged.find((r) => r.role === role) ?? { role, tokens: 0, busy_ms: 0, turns: 0 },
    );
    return ok({
      summary: summaryOf(m, l),
      run: m,
      liveness: {
        live: l.live,
        ...(l.pid !== undefined ? { pid: l.pid } : {}),
        heartbeat_age_ms: l.heartbeatAgeMs,
        ...(l.stale ? { stale: l.stale } : {}),
      },
      budget: {
        turns: m.turns,
        max_turns: m.max_turns,
        wall_ms_used: m.wall_ms_used,
        max_wall_ms: m.max_wall_ms,
        tokens_used: m.tokens_used,
        max_tokens: m.max_tokens,
        roles,
      },
      events: w.index.count,
      actions: this.actions,
    });
  }

  close(): void {
    for (const w of this.watches.values()) w.close();
    this.watches.clear();
  }
}

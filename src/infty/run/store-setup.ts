/**
 * A run's store before the run is driven: a new run's store (its repository checked first), an
 * existing one reopened and prepared for a resume (an interrupted restore finished, a missing
 * checkpoint caught up, the flags given on resume recorded), and a run whose deliverable was
 * already accepted completed from that record.
 */

import { type RunSettings, roleNames, runSettings } from "../../config/infty/index.ts";
import { Log } from "../../util/log.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { checkListed } from "../checkpoints.ts";
import { checkDeliverable } from "../deliverable.ts";
import { catchUpCheckpoint } from "../handoff-record.ts";
import { objectiveMessage } from "../prompts.ts";
import { prepareRepository } from "../repo/repository.ts";
import { finishInterruptedRestore } from "../restore.ts";
import { generateRunId, type RunMeta, RunStore, validateRunId } from "../run-store.ts";
import { deliverableRules } from "./delivery.ts";
import type { InftyOptions, InftyResult } from "./options.ts";

const log = Log.create("infty");

/** run.json's settings: the defaults, each role's model, the roles' tools. */
function settingsOf(o: InftyOptions, verifiers: number): RunSettings {
  const roles = o.roleConfig ? Object.fromEntries(roleNames(verifiers).map((r) => [r, o.roleConfig!(r)])) : {};
  return runSettings(o.config, roles, o.tools);
}

export async function createStore(o: InftyOptions): Promise<Result<RunStore>> {
  if (!o.objective?.trim()) return err("usage", "an objective is required");
  const runId = o.runId ?? generateRunId();
  const valid = validateRunId(runId);
  if ("error" in valid) return valid;
  // The repository is checked (clean tree, free branch) before anything of the run exists.
  const repo = o.repo ? await prepareRepository(o.repo, runId) : undefined;
  if (repo && "error" in repo) return repo;
  const init = {
    run_id: runId,
    objective: o.objective,
    verifiers: o.verifiers ?? 1,
    consensus: o.consensus ?? "all",
    max_turns: o.maxTurns ?? 200,
    max_wall_ms: o.maxWallMs ?? 24 * 3600_000,
    max_tokens: o.maxTokens ?? null,
    prompt_only_roles: o.structuredOutput === false ? roleNames(o.verifiers ?? 1) : [],
    settings: settingsOf(o, o.verifiers ?? 1),
    ...(o.roleTimeoutMs ? { role_timeout_ms: o.roleTimeoutMs } : {}),
    ...(repo ? { repo: repo.ok } : {}),
  } as const;
  // The first pending action is in the first run.json: no run exists without one.
  return RunStore.create(o.home, init, { type: "solver_message", message: objectiveMessage(o.objective) });
}

export async function loadStore(o: InftyOptions): Promise<Result<RunStore>> {
  if (!o.runId) return err("usage", "resume needs a run id");
  return RunStore.load(o.home, o.runId, { recover: true });
}

/** What a resume does before it drives the run (holding its lease). */
export async function prepareResume(o: InftyOptions, store: RunStore): Promise<Result<void>> {
  // A restore a crash cut short is finished first: the run goes on from the checkpoint.
  const restored = await finishInterruptedRestore(store);
  if ("error" in restored) return restored;
  if (restored.ok)
    o.report({ type: "warning", message: `finished the interrupted restore to ${restored.ok.checkpoint.id}` });
  if (store.state.deliverable) return ok(undefined);
  // The checkpoint list a crash left a line short is written again before more are appended.
  await checkListed(store.dir);
  const caught = await catchUpCheckpoint(store);
  for (const message of caught?.warnings ?? []) o.report({ type: "warning", message });
  if (caught?.checkpoint)
    o.report({ type: "checkpoint", name: caught.checkpoint.id, trigger: "resume", summary: caught.checkpoint.summary });
  // Recorded each time: a flag given on resume is what the run uses from now on.
  const patch: Partial<RunMeta> = {
    status: "running",
    status_detail: "",
    settings: settingsOf(o, store.state.verifiers),
  };
  if (o.maxTurns) patch.max_turns = o.maxTurns;
  if (o.maxWallMs) patch.max_wall_ms = o.maxWallMs;
  if (o.maxTokens) patch.max_tokens = o.maxTokens;
  if (o.structuredOutput === false) patch.prompt_only_roles = roleNames(store.state.verifiers);
  if (o.roleTimeoutMs) patch.role_timeout_ms = o.roleTimeoutMs;
  await store.update(patch);
  return ok(undefined);
}

/** An accepted deliverable means complete, also when a crash came before the run was marked so. */
export async function completeFromRecord(o: InftyOptions, store: RunStore): Promise<Result<InftyResult>> {
  const d = store.state.deliverable!;
  const check = await checkDeliverable(d.path, deliverableRules(store.state.repo));
  if ("error" in check)
    return err(
      "deliverable_changed",
      `run ${store.id}'s accepted deliverable ${d.path} no longer passes its check (changed since?): ${check.error.message}`,
    );
  const detail =
    store.state.status === "complete"
      ? "already complete; its deliverable passed the check again"
      : "verified deliverable accepted (marked complete on resume)";
  if (store.state.status !== "complete")
    await store.update({
      status: "complete",
      status_detail: "verified deliverable accepted",
      pending: null,
      inflight: null,
    });
  await store.log({ type: "run_finished", status: "complete", detail });
  log.info("run finished", { run_id: store.id, status: "complete" });
  o.report({
    type: "run_finished",
    run_id: store.id,
    status: "complete",
    detail,
    deliverable: d.path,
    summary: d.summary,
  });
  return ok({
    runId: store.id,
    dir: store.dir,
    status: "complete",
    detail,
    deliverable: d.path,
    summary: d.summary,
    ...(d.branch ? { branch: d.branch } : {}),
    ...(d.commit ? { commit: d.commit } : {}),
  });
}

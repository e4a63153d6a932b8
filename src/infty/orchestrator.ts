/**
 * The infty orchestrator: drives a Solver with a Director and N Verifiers until a verified
 * deliverable exists. Its whole state is run.json's `pending` action (what must happen next),
 * saved after every handoff, so `relay infty resume` continues after any crash.
 */
import path from "node:path";
import { z } from "zod";
import type { ModelClient } from "../model/client.ts";
import { createScriptedClient, ScriptSchema } from "../model/scripted.ts";
import { nonInteractiveApprover } from "../session/approval.ts";
import type { RelayConfig } from "../session/config.ts";
import type { SessionEvent } from "../session/events.ts";
import { openSession } from "../session/runtime.ts";
import { err, ok, type Result } from "../util/result.ts";
import { checkDeliverable } from "./deliverable.ts";
import { CrossSessionHub } from "./hub.ts";
import { CONTINUE_NUDGE, correctiveRetry, DIRECTOR_PROMPT, FINALIZATION_PROMPT, objectiveMessage, SOLVER_PROMPT, VERIFIER_PROMPT } from "./prompts.ts";
import { generateRunId, RunStore, validateRunId, type Pending, type RunMeta } from "./run-store.ts";
import { aggregate, DirectiveSchema, parseReply, parseSolverSignal, VerdictSchema, type RoleVerdict } from "./signals.ts";

export const InftyScriptSchema = z.strictObject({
  solver: ScriptSchema,
  director: ScriptSchema.optional(),
  verifiers: z.array(ScriptSchema).default([]),
});

/** What the orchestrator reports while it works (rendered as progress lines or JSONL). */
export type InftyEvent =
  | { type: "run_started"; run_id: string; dir: string; resumed: boolean; objective: string }
  | { type: "role_event"; role: string; event: SessionEvent }
  | { type: "handoff"; from: string; to: string; summary: string }
  | { type: "verdict"; role: string; verdict: "pass" | "fail"; reasons: string[] }
  | { type: "verification_summary"; overall: "pass" | "fail"; passes: number; total: number }
  | { type: "checkpoint"; name: string }
  | { type: "heartbeat"; turns: number; max_turns: number; elapsed_ms: number; last_activity: string }
  | { type: "warning"; message: string }
  | { type: "run_finished"; run_id: string; status: string; detail: string; deliverable?: string; summary?: string | null };

export interface InftyOptions {
  home: string;
  config: RelayConfig;
  objective?: string;
  runId?: string;
  /** Continue an existing run instead of creating one. */
  resume?: boolean;
  verifiers?: number;
  consensus?: "all" | "majority";
  maxTurns?: number;
  maxWallMs?: number;
  /** How long a Director or Verifier may take for one answer. */
  roleTimeoutMs?: number;
  checkpointEvery?: number;
  /** Nudges to a Solver that stops without a signal before the Director is asked to step in. */
  maxNudges?: number;
  heartbeatMs?: number;
  /** A model per role (scripted runs); default: from config. */
  modelFor?: (role: string) => ModelClient | undefined;
  report: (e: InftyEvent) => void;
  signal: AbortSignal;
  /** End the run at the first failed tool call, naming it (scripted demos, CI). */
  failOnToolError?: boolean;
}

export interface InftyResult {
  runId: string;
  dir: string;
  status: "complete" | "failed" | "interrupted" | "budget_exhausted";
  detail: string;
  deliverable?: string;
  summary?: string | null;
}

/** Loads a scripted-run file: one script per role. */
export function scriptedModels(text: string, file: string): Result<(role: string) => ModelClient | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return err("invalid_script", `${file} is not JSON: ${(e as Error).message}`);
  }
  const parsed = InftyScriptSchema.safeParse(raw);
  if (!parsed.success) return err("invalid_script", `${file} is not an infty script ({solver, director?, verifiers[]}): ${z.prettifyError(parsed.error)}`);
  const s = parsed.data;
  const clients = new Map<string, ModelClient>();
  return ok((role: string) => {
    let c = clients.get(role);
    if (c) return c;
    const script = role === "solver" ? s.solver : role === "director" ? s.director : s.verifiers[Number(role.split("-")[1]) - 1] ?? s.verifiers.at(-1);
    if (!script) return undefined;
    c = createScriptedClient({ script, scriptPath: `${file} (${role})` });
    clients.set(role, c);
    return c;
  });
}

function runSettings(c: RelayConfig): NonNullable<RunMeta["settings"]> {
  return {
    model: c.model,
    model_provider: c.model_provider,
    api_key_env: c.api_key_env,
    sandbox_mode: c.sandbox_mode,
    sandbox_mechanism: c.sandbox.mechanism,
    sandbox_best_effort: c.sandbox.best_effort,
    approval_policy: c.approval_policy,
    ...(c.base_url ? { base_url: c.base_url } : {}),
    ...(c.model_reasoning_effort ? { model_reasoning_effort: c.model_reasoning_effort } : {}),
    ...(c.model_reasoning_summary ? { model_reasoning_summary: c.model_reasoning_summary } : {}),
    ...(c.executor ? { executor: c.executor } : {}),
  };
}

function rolePrompt(role: string): string {
  if (role === "solver") return SOLVER_PROMPT;
  if (role === "director") return DIRECTOR_PROMPT;
  return VERIFIER_PROMPT;
}

export async function runInfty(o: InftyOptions): Promise<Result<InftyResult>> {
  const started = Date.now();
  let store: RunStore;
  if (o.resume) {
    if (!o.runId) return err("usage", "resume needs a run id");
    const loaded = await RunStore.load(o.home, o.runId);
    if ("error" in loaded) return loaded;
    store = loaded.ok;
    if (store.state.status === "complete") return err("run_complete", `run ${o.runId} is already complete; its deliverable is ${store.state.deliverable?.path}`);
    // Recorded each time: a flag given on resume is what the run uses from now on.
    const patch: Parameters<RunStore["update"]>[0] = { status: "running", status_detail: "", settings: runSettings(o.config) };
    if (o.maxTurns) patch.max_turns = o.maxTurns;
    if (o.maxWallMs) patch.max_wall_ms = o.maxWallMs;
    await store.update(patch);
  } else {
    if (!o.objective?.trim()) return err("usage", "an objective is required");
    const runId = o.runId ?? generateRunId();
    const valid = validateRunId(runId);
    if ("error" in valid) return valid;
    const created = await RunStore.create(o.home, {
      run_id: runId,
      objective: o.objective,
      verifiers: o.verifiers ?? 1,
      consensus: o.consensus ?? "all",
      max_turns: o.maxTurns ?? 200,
      max_wall_ms: o.maxWallMs ?? 24 * 3600_000,
      settings: runSettings(o.config),
    });
    if ("error" in created) return created;
    store = created.ok;
    await store.update({ pending: { type: "solver_message", message: objectiveMessage(o.objective) } });
  }
  o.report({ type: "run_started", run_id: store.id, dir: store.dir, resumed: Boolean(o.resume), objective: store.state.objective });
  await store.log({ type: "run_started", resumed: Boolean(o.resume), pid: process.pid });

  const hub = new CrossSessionHub();
  const roles = ["solver", "director", ...Array.from({ length: store.state.verifiers }, (_, i) => `verifier-${i + 1}`)];
  let lastActivity = "starting sessions";
  let lastBeat = Date.now();
  const beat = setInterval(() => {
    const now = Date.now();
    void store.heartbeat(now - lastBeat);
    lastBeat = now;
    o.report({ type: "heartbeat", turns: store.state.turns, max_turns: store.state.max_turns, elapsed_ms: now - started, last_activity: lastActivity });
  }, o.heartbeatMs ?? 15_000);
  beat.unref?.();

  const finish = async (statusIn: InftyResult["status"], detailIn: string, extra: Partial<InftyResult> = {}): Promise<Result<InftyResult>> => {
    // A stop for a failed tool call can surface anywhere as a cancellation: report its cause.
    const stoppedByTool = toolFailure !== undefined && statusIn !== "complete";
    const status = stoppedByTool ? "failed" : statusIn;
    const detail = stoppedByTool ? `${toolFailure} (--fail-on-tool-error)` : detailIn;
    clearInterval(beat);
    await store.heartbeat(Date.now() - lastBeat);
    await store.update({ status, status_detail: detail });
    await store.log({ type: "run_finished", status, detail });
    for (const s of hub.sessions(store.id)) {
      await s.handle.close();
      hub.unregister(store.id, s.role);
    }
    o.report({ type: "run_finished", run_id: store.id, status, detail, deliverable: extra.deliverable, summary: extra.summary });
    return ok({ runId: store.id, dir: store.dir, status, detail, ...extra });
  };

  // --fail-on-tool-error stops the run through this, as Ctrl-C does through o.signal.
  const stopper = new AbortController();
  const stop = AbortSignal.any([o.signal, stopper.signal]);
  let toolFailure: string | undefined;

  // Open (or reopen from their rollouts) every role's session, registered in the hub.
  for (const role of roles) {
    let sessionId: string | undefined;
    const fanout = hub.emitterFor(() => sessionId);
    const opened = await openSession({
      home: o.home,
      config: { ...o.config, approval_policy: "never" },
      cwd: store.dir,
      resume: store.rolloutOf(role),
      model: o.modelFor?.(role),
      approver: nonInteractiveApprover,
      source: "infty",
      extraInstructions: [rolePrompt(role), `Run id: ${store.id}. Objective:\n${store.state.objective}`],
      emit: (e) => {
        fanout(e);
        if (e.type === "tool_call") lastActivity = `${role} ▸ ${e.name}: ${e.display.split("\n")[0]!.slice(0, 80)}`;
        const failedTool = e.type === "tool_result" && !e.success;
        if (failedTool && o.failOnToolError && !toolFailure) {
          toolFailure = `the ${role}'s ${e.name} call failed: ${e.output.split("\n").find((l) => l.trim()) ?? "(no output)"}`;
          stopper.abort();
        }
        if (failedTool || e.type === "tool_call" || e.type === "warning" || e.type === "error" || e.type === "context_compacted" || e.type === "assistant_message") o.report({ type: "role_event", role, event: e });
      },
    });
    if ("error" in opened) return finish("failed", `could not start the ${role} session: ${opened.error.message}`);
    sessionId = opened.ok.id;
    hub.register(store.id, role, opened.ok);
    await store.setRole(role, { session_id: opened.ok.id, rollout_path: opened.ok.rolloutPath });
  }

  const solver = hub.get(store.id, "solver")!;
  let nudges = 0;
  let solverTurnsSinceCheckpoint = 0;
  const timeout = o.roleTimeoutMs ?? 20 * 60_000;
  const setPending = async (pending: Pending | null, from: string, to: string, summary: string) => {
    await store.update({ pending });
    await store.log({ type: "handoff", from, to, summary });
    o.report({ type: "handoff", from, to, summary });
  };

  /** Asks a role for a JSON reply; one corrective retry on a malformed one. */
  async function askJson<T extends z.ZodType>(role: string, message: string, schema: T, shape: string): Promise<Result<z.output<T>>> {
    lastActivity = `waiting for ${role}`;
    let text = await hub.awaitFirstAssistant(store.id, role, message, timeout, stop);
    if ("error" in text) return text;
    let parsed = parseReply(schema, text.ok, role);
    if ("ok" in parsed) return parsed;
    o.report({ type: "warning", message: `${parsed.error.message}; asking ${role} once more` });
    text = await hub.awaitFirstAssistant(store.id, role, correctiveRetry(role, parsed.error.message, shape), timeout, stop);
    if ("error" in text) return text;
    parsed = parseReply(schema, text.ok, role);
    if ("error" in parsed) return err("malformed_reply", `${role} replied twice without following its JSON contract: ${parsed.error.message}`);
    return parsed;
  }

  try {
    for (;;) {
      if (toolFailure) return finish("failed", toolFailure);
      if (stop.aborted) return finish("interrupted", "interrupted; resume with: relay infty resume " + store.id);
      const st = store.state;
      if (st.turns >= st.max_turns) return finish("budget_exhausted", `the turn budget (${st.max_turns} Solver turns) is used up; raise it with: relay infty resume ${store.id} --max-turns N`);
      if (st.wall_ms_used + (Date.now() - lastBeat) >= st.max_wall_ms) return finish("budget_exhausted", `the wall-clock budget is used up; raise it with: relay infty resume ${store.id} --max-wall-minutes N`);
      const pending = st.pending;
      if (!pending) return finish("failed", "the run has nothing pending and no deliverable; its state is inconsistent");

      if (pending.type === "solver_message") {
        lastActivity = "solver working";
        // After a crash mid-turn the message is already in the Solver's history: continue instead.
        const continuing = solver.handle.agent.pendingWork() === "continue";
        const r = await hub.postUserTurn(store.id, "solver", continuing ? undefined : pending.message, stop);
        await store.update({ turns: store.state.turns + 1 });
        if ("error" in r) return finish("failed", `the Solver's turn failed: ${r.error.message}`);
        if (r.ok.status === "aborted") continue;
        if (++solverTurnsSinceCheckpoint >= (o.checkpointEvery ?? 5)) {
          solverTurnsSinceCheckpoint = 0;
          const name = await store.checkpoint();
          o.report({ type: "checkpoint", name });
        }
        const signal = parseSolverSignal(r.ok.finalMessage);
        if (!signal) {
          nudges++;
          if (nudges > (o.maxNudges ?? 2)) {
            nudges = 0;
            await setPending({ type: "direction", prompt: `The Solver stopped without a usable signal. Its last message:\n${r.ok.finalMessage.slice(0, 4000)}\nDecide how it should proceed.` }, "solver", "director", "stalled Solver backstopped by the Director");
          } else {
            await setPending({ type: "solver_message", message: CONTINUE_NUDGE }, "orchestrator", "solver", "no signal; nudged to continue");
          }
          continue;
        }
        nudges = 0;
        if (signal.type === "direction_request") {
          await setPending({ type: "direction", prompt: signal.prompt }, "solver", "director", signal.prompt.slice(0, 120));
        } else if (signal.type === "verification_request") {
          await setPending({ type: "verification", claim_path: signal.claim_path, notes: signal.notes, final: false }, "solver", "verifiers", signal.claim_path);
        } else if (!store.state.verified_at) {
          await setPending(
            { type: "solver_message", message: JSON.stringify({ type: "delivery_rejected", problem: "no claim has passed verification yet; send a verification_request first" }) },
            "orchestrator",
            "solver",
            "delivery before any passing verification rejected",
          );
        } else {
          const where = await store.resolveInside(signal.deliverable_path);
          if ("error" in where) {
            await setPending({ type: "solver_message", message: JSON.stringify({ type: "delivery_rejected", problem: where.error.message }) }, "orchestrator", "solver", where.error.message);
            continue;
          }
          const check = await checkDeliverable(where.ok);
          if ("error" in check) {
            await setPending({ type: "solver_message", message: JSON.stringify({ type: "delivery_rejected", problem: check.error.message }) }, "orchestrator", "solver", "deliverable manifest rejected");
            continue;
          }
          await store.note("orchestrator", "final_delivery", `deliverable ${where.ok} accepted: ${check.ok.entries.length} files, ${check.ok.totalBytes} bytes`);
          await store.update({ pending: null, deliverable: { path: where.ok, summary: signal.summary } });
          await store.checkpoint();
          return finish("complete", "verified deliverable accepted", { deliverable: where.ok, summary: signal.summary });
        }
        continue;
      }

      if (pending.type === "direction") {
        const payload = JSON.stringify({ type: "direction_request", prompt: pending.prompt, objective: st.objective }, null, 2);
        const d = await askJson("director", payload, DirectiveSchema, '{"directive": "...", "rationale": "..."}');
        if ("error" in d) {
          if (d.error.code === "interrupted") continue;
          return finish("failed", d.error.message);
        }
        await store.note("director", "directive", d.ok.directive);
        await setPending({ type: "solver_message", message: JSON.stringify({ type: "directive", directive: d.ok.directive, rationale: d.ok.rationale ?? null }, null, 2) }, "director", "solver", d.ok.directive.slice(0, 120));
        continue;
      }

      // Verification by every Verifier, in turn.
      const claim = await store.resolveInside(pending.claim_path);
      if ("error" in claim) {
        await setPending({ type: "solver_message", message: JSON.stringify({ type: "verification_feedback", overall: "fail", verdicts: [], problem: claim.error.message }) }, "orchestrator", "solver", claim.error.message);
        continue;
      }
      const verdicts: RoleVerdict[] = [];
      const payload = JSON.stringify({ type: "verification_request", claim_path: pending.claim_path, notes: pending.notes, objective: st.objective }, null, 2);
      for (let i = 1; i <= st.verifiers; i++) {
        const role = `verifier-${i}`;
        const v = await askJson(role, payload, VerdictSchema, '{"verdict": "pass" | "fail", "reasons": ["..."], "suggestions": ["..."]}');
        if ("error" in v) {
          if (v.error.code === "interrupted") break;
          return finish("failed", v.error.message);
        }
        verdicts.push({ role, ...v.ok });
        o.report({ type: "verdict", role, verdict: v.ok.verdict, reasons: v.ok.reasons });
        await store.note(role, "verdict", `${v.ok.verdict}: ${v.ok.reasons.join("; ")}`);
      }
      if (stop.aborted) continue;
      const overall = aggregate(verdicts, st.consensus);
      const passes = verdicts.filter((v) => v.verdict === "pass").length;
      o.report({ type: "verification_summary", overall, passes, total: verdicts.length });
      const feedback = JSON.stringify({ type: "verification_feedback", overall, consensus: st.consensus, verdicts }, null, 2);
      if (overall === "pass") await store.update({ verified_at: new Date().toISOString() });
      const message = overall === "pass" ? `${feedback}\n\n${FINALIZATION_PROMPT}` : feedback;
      await setPending({ type: "solver_message", message }, "verifiers", "solver", `${overall} (${passes}/${verdicts.length} passed)`);
    }
  } catch (e) {
    return finish("failed", `the orchestrator failed: ${(e as Error).message}`);
  }
}

export function describeDir(dir: string, home: string): string {
  const rel = path.relative(process.cwd(), dir);
  return rel.startsWith("..") || path.isAbsolute(rel) ? dir : rel || home;
}

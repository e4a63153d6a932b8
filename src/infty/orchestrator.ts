/**
 * The infty orchestrator: drives a Solver with a Director and N Verifiers until a verified
 * deliverable exists. Its whole state is in run.json: `pending` (what must happen next) and
 * `inflight` (a message handed to a role whose answer is not used yet). Each transition is one
 * atomic write, so `relay infty resume` replays at most the one a crash interrupted: an answer
 * already in a role's rollout is used, not asked for again, and a run whose deliverable was
 * accepted is complete, whatever else the crash cut short.
 */

import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import type { RelayConfig } from "../config/config.ts";
import type { SessionChoices } from "../config/resume-settings.ts";
import type { SessionEvent } from "../contracts/events.ts";
import type { ModelClient } from "../model/client.ts";
import type { ResponseItem } from "../model/items.ts";
import { createScriptedClient, ScriptSchema } from "../model/scripted.ts";
import { nonInteractiveApprover } from "../policy/approval.ts";
import type { TurnOptions } from "../session/agent.ts";
import { openSession, type SessionMemories } from "../session/runtime.ts";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { ActivityBoard, type RoleActivity } from "./activity.ts";
import { ChangeFeed } from "./change-feed.ts";
import { CHECKPOINT_DIRS, type CheckpointTrigger } from "./checkpoint-format.ts";
import { PACK_LOOSE } from "./checkpoint-pack.ts";
import { Snapshotter } from "./checkpoint-tree.ts";
import { checkListed, gitdirOf, initCheckpoints } from "./checkpoints.ts";
import { checkClaim } from "./claims.ts";
import { checkDeliverable, type DeliverableRules } from "./deliverable.ts";
import { writeFileAtomic } from "./durable.ts";
import { roleLogEvent } from "./event-log.ts";
import { deliveryOf, rolloutOffset } from "./exchange.ts";
import { dropReadCache, loadGit, looseWritten, packedNow } from "./git-store.ts";
import { catchUpCheckpoint, recordHandoff } from "./handoff-record.ts";
import { CrossSessionHub } from "./hub.ts";
import { recordRound, writeIndexes } from "./index-files.ts";
import { CLAIMS_INDEX } from "./index-format.ts";
import { asksQuestion } from "./json-in-text.ts";
import type { RunLease } from "./lease.ts";
import { FileLease } from "./lease-file.ts";
import { readOperatorNotes } from "./operator.ts";
import { packInChild } from "./pack-run.ts";
import {
  correctiveRetry,
  DIRECTOR_PROMPT,
  FINAL_CHECK,
  FINALIZATION_PROMPT,
  objectiveMessage,
  proseQuestion,
  REDELIVER_PROMPT,
  REPO_FINAL_CHECK,
  REPO_FINALIZATION_PROMPT,
  SOLVER_PROMPT,
  solverCorrective,
  VERIFIER_PROMPT,
} from "./prompts.ts";
import { branchDiff, commitCheckout, ensureCheckout, prepareReview } from "./repo/checkout.ts";
import { BRANCH_DIFF_FILE, checkoutDir, type RepoRecord, reviewDir, shortCommit } from "./repo/record.ts";
import { prepareRepository, type RepoRequest } from "./repo/repository.ts";
import { finishInterruptedRestore } from "./restore.ts";
import { roleWorkspace } from "./role-workspace.ts";
import { roleKind, roleNames, verifierNumber } from "./roles.ts";
import { type RunSettings, runSettings } from "./run-settings.ts";
import {
  generateRunId,
  type Inflight,
  inflightList,
  LeaseLostError,
  type Pending,
  type RunMeta,
  RunStore,
  validateRunId,
} from "./run-store.ts";
import { scriptTurnsUsed } from "./scripted-resume.ts";
import {
  aggregate,
  DirectiveSchema,
  OUTPUT_SCHEMAS,
  type RoleVerdict,
  readContract,
  SHAPES,
  type SolverSignal,
  SolverSignalSchema,
  VerdictSchema,
} from "./signals.ts";

export const InftyScriptSchema = lazySchema(() =>
  z.strictObject({
    solver: ScriptSchema,
    director: ScriptSchema.optional(),
    verifiers: z.array(ScriptSchema).default([]),
  }),
);

/** What the orchestrator reports while it works (rendered as progress lines or JSONL). */
export type InftyEvent =
  | {
      type: "run_started";
      run_id: string;
      dir: string;
      resumed: boolean;
      objective: string;
      repo?: { path: string; branch: string; checkout: string; base_commit: string };
    }
  | { type: "role_event"; role: string; event: SessionEvent }
  | { type: "handoff"; from: string; to: string; summary: string }
  | { type: "verdict"; role: string; verdict: "pass" | "fail"; reasons: string[] }
  | { type: "verification_summary"; overall: "pass" | "fail"; passes: number; total: number }
  | { type: "checkpoint"; name: string; trigger: CheckpointTrigger; summary: string }
  | {
      type: "heartbeat";
      turns: number;
      max_turns: number;
      elapsed_ms: number;
      last_activity: string;
      tokens_used: number;
      max_tokens: number | null;
      roles: RoleActivity[];
    }
  | { type: "warning"; message: string }
  | {
      type: "run_finished";
      run_id: string;
      status: string;
      detail: string;
      deliverable?: string;
      summary?: string | null;
    };

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
  /** false: no role is asked for structured output, for the rest of the run (default true). */
  structuredOutput?: boolean;
  /** Tokens all roles may use together; the run stops cleanly (resumable) when they are used up. */
  maxTokens?: number;
  /** How long a Director or Verifier may take for one answer. */
  roleTimeoutMs?: number;
  /** Nudges to a Solver that stops without a signal before the Director is asked to step in. */
  maxNudges?: number;
  heartbeatMs?: number;
  /**
   * A model per role (scripted runs); default: from config. `history` is given for a resumed
   * role: its session's history, readable from the first request on.
   */
  modelFor?: (role: string, history?: () => readonly ResponseItem[]) => ModelClient | undefined;
  report: (e: InftyEvent) => void;
  signal: AbortSignal;
  /** End the run at the first failed tool call, naming it (scripted demos, CI). */
  failOnToolError?: boolean;
  /** The memory store the roles' sessions inject from (wired by the CLI). */
  memories?: SessionMemories;
  /** Each role's configuration (its own model; src/infty/role-models.ts); default: `config`. */
  roleConfig?: (role: string) => RelayConfig;
  /** The roles' tools: code mode, capability roots, the executor's name (as for relay run). */
  tools?: SessionChoices;
  /** A new run on a repository (its own branch and checkout); absent: the run store only. */
  repo?: RepoRequest;
  /** The lease that makes this process the run's one driver; default: a file in the run store. */
  lease?: (runDir: string, runId: string) => RunLease;
}

export interface InftyResult {
  runId: string;
  dir: string;
  status: "complete" | "failed" | "interrupted" | "budget_exhausted";
  detail: string;
  deliverable?: string;
  summary?: string | null;
  /** A run on a repository: its branch and the commit the Verifiers passed. */
  branch?: string;
  commit?: string;
}

/** Loads a scripted-run file: one script per role; a resumed role goes on where its session stopped. */
export function scriptedModels(text: string, file: string): Result<NonNullable<InftyOptions["modelFor"]>> {
  const parsed = parseJsonWith(InftyScriptSchema, text, file, {
    code: "invalid_script",
    invalid: "is not an infty script ({solver, director?, verifiers[]})",
  });
  if ("error" in parsed) return parsed;
  const s = parsed.ok;
  const clients = new Map<string, ModelClient>();
  return ok((role, history) => {
    let c = clients.get(role);
    if (c) return c;
    const script =
      role === "solver"
        ? s.solver
        : role === "director"
          ? s.director
          : (s.verifiers[verifierNumber(role) - 1] ?? s.verifiers.at(-1));
    if (!script) return undefined;
    c = createScriptedClient({
      script,
      scriptPath: `${file} (${role})`,
      startAt: history ? () => scriptTurnsUsed(history(), script.turns) : 0,
    });
    clients.set(role, c);
    return c;
  });
}

/** run.json's settings: the defaults, each role's model, the roles' tools. */
function settingsOf(o: InftyOptions, verifiers: number): RunSettings {
  const roles = o.roleConfig ? Object.fromEntries(roleNames(verifiers).map((r) => [r, o.roleConfig!(r)])) : {};
  return runSettings(o.config, roles, o.tools);
}

function rolePrompt(role: string): string {
  return { solver: SOLVER_PROMPT, director: DIRECTOR_PROMPT, verifier: VERIFIER_PROMPT }[roleKind(role)];
}

const log = Log.create("infty");

/** Handoffs between two full garbage collections of a driver (see collectNowAndThen). */
const GC_EVERY = 20;

export async function runInfty(o: InftyOptions): Promise<Result<InftyResult>> {
  const opened = o.resume ? await loadStore(o) : await createStore(o);
  if ("error" in opened) return opened;
  const store = opened.ok;
  // One driver per run: nothing of the run is written before this process holds its lease.
  const grant = await (o.lease ?? ((dir, id) => new FileLease(dir, id)))(store.dir, store.id).acquire();
  if ("error" in grant) return grant;
  store.fenceWith(grant.ok);
  try {
    if (o.resume) {
      const prepared = await prepareResume(o, store);
      if ("error" in prepared) return prepared;
      // What the resume read of the checkpoints (whole packs) is not kept while the run goes on.
      dropReadCache();
    }
    const repo = store.state.repo;
    o.report({
      type: "run_started",
      run_id: store.id,
      dir: store.dir,
      resumed: Boolean(o.resume),
      objective: store.state.objective,
      ...(repo
        ? {
            repo: {
              path: repo.path,
              branch: repo.branch,
              checkout: checkoutDir(store.dir),
              base_commit: repo.base_commit,
            },
          }
        : {}),
    });
    await store.log({
      type: "run_started",
      resumed: Boolean(o.resume),
      pid: process.pid,
      host: os.hostname(),
      lease_epoch: grant.ok.epoch,
    });
    if (grant.ok.tookOver) {
      o.report({ type: "warning", message: grant.ok.tookOver });
      await store.log({ type: "warning", message: grant.ok.tookOver });
    }
    log.info("run started", { run_id: store.id, resumed: Boolean(o.resume), epoch: grant.ok.epoch });
    if (store.state.deliverable) return await completeFromRecord(o, store);
    return await new InftyRun(o, store).drive();
  } catch (e) {
    if (e instanceof LeaseLostError) return err("lease_lost", `run ${store.id}: ${e.message}`);
    throw e;
  } finally {
    await grant.ok.release();
  }
}

async function createStore(o: InftyOptions): Promise<Result<RunStore>> {
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

async function loadStore(o: InftyOptions): Promise<Result<RunStore>> {
  if (!o.runId) return err("usage", "resume needs a run id");
  return RunStore.load(o.home, o.runId, { recover: true });
}

/** What a resume does before it drives the run (holding its lease). */
async function prepareResume(o: InftyOptions, store: RunStore): Promise<Result<void>> {
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
async function completeFromRecord(o: InftyOptions, store: RunStore): Promise<Result<InftyResult>> {
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

/** On a repository the delivery is a commit: deliverable/ may hold only its README, beside the orchestrator's diff. */
function deliverableRules(repo: RepoRecord | undefined): DeliverableRules {
  return repo ? { allowEmptyManifest: true, orchestratorFiles: [BRANCH_DIFF_FILE] } : {};
}

/** A role's answer: its final message, and whether Ctrl-C cut the turn short. */
interface Reply {
  text: string;
  aborted: boolean;
}

/** One move of the state machine: the next pending action and how the handoff is reported. */
interface Transition {
  pending: Pending;
  from: string;
  to: string;
  summary: string;
}

/** undefined: go on with the next pending action. */
type Step = Result<InftyResult> | undefined;

/** What a Verifier is sent: the claim (or, in the final round, the deliverable) to check. */
function verificationPayload(
  p: Extract<Pending, { type: "verification" }>,
  objective: string,
  runDir: string,
  repo: RepoRecord | undefined,
): string {
  const check = repo ? REPO_FINAL_CHECK : FINAL_CHECK;
  const what = p.final
    ? { type: "verification_request", final: true, deliverable_path: p.claim_path, summary: p.notes, check }
    : { type: "verification_request", claim_path: p.claim_path, notes: p.notes };
  // On a repository the Verifier's cwd is the checkout; the claim is named in the run store too.
  const where =
    repo && p.commit
      ? {
          commit: p.commit,
          branch: repo.branch,
          checkout: reviewDir(runDir),
          run_store: runDir,
          [p.final ? "deliverable_file" : "claim_file"]: path.join(runDir, p.claim_path, p.final ? "README.md" : ""),
        }
      : {};
  return JSON.stringify({ ...what, ...where, objective }, null, 2);
}

const nonEmpty = <T>(list: T[]): T[] | null => (list.length ? list : null);

const rejected = (problem: string, summary: string): Transition => ({
  pending: { type: "solver_message", message: JSON.stringify({ type: "delivery_rejected", problem }) },
  from: "orchestrator",
  to: "solver",
  summary,
});

class InftyRun {
  private readonly hub = new CrossSessionHub();
  private readonly started = Date.now();
  private lastActivity = "starting sessions";
  private lastBeat = Date.now();
  private beat: ReturnType<typeof setInterval> | undefined;
  /** A heartbeat's write is under way. */
  private beating = false;
  /** --fail-on-tool-error stops the run through this, as Ctrl-C does through o.signal. */
  private readonly stopper = new AbortController();
  private readonly stop: AbortSignal;
  private toolFailure: string | undefined;
  private nudges = 0;
  /** Solver turns in a row that ended without a usable signal, and what was wrong with the last. */
  private silentTurns = 0;
  private lastProblem = "";
  private queue: Promise<void> = Promise.resolve();
  private readonly board: ActivityBoard;
  /** What the previous process had in flight; each used once, by the exchange it belongs to. */
  private resumed: Inflight[];
  /** Kept between handoffs, so that a handoff's index and checkpoint cost what changed since the last. */
  private kept: { feed: ChangeFeed; snapshotter: Snapshotter } | undefined;
  /** The checkpoints' repository being packed, in the background. */
  private packing: Promise<void> = Promise.resolve();
  private sinceGc = 0;

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
  ) {
    this.stop = AbortSignal.any([o.signal, this.stopper.signal]);
    this.resumed = inflightList(store.state.inflight);
    this.board = new ActivityBoard(store.state.tokens_used);
  }

  async drive(): Promise<Result<InftyResult>> {
    this.startHeartbeat();
    try {
      await initCheckpoints(this.store.dir).catch((e: Error) =>
        this.o.report({ type: "warning", message: `could not create the run's checkpoint repository: ${e.message}` }),
      );
      this.kept = {
        feed: await ChangeFeed.start(this.store.dir, CHECKPOINT_DIRS),
        snapshotter: await Snapshotter.open(await loadGit(), gitdirOf(this.store.dir)),
      };
      // Loose objects a previous process left (it stopped before packing them) are packed now.
      this.pack(false);
      const unready = await this.prepareWorkspaces();
      if (unready) return unready;
      const failed = await this.openRoles();
      if (failed) return failed;
      for (;;) {
        const done = await this.step();
        if (done) return done;
      }
    } catch (e) {
      // A driver whose run was taken over stops without writing anything more.
      if (e instanceof LeaseLostError) {
        clearInterval(this.beat);
        await this.closeRoles();
        throw e;
      }
      return this.finish("failed", `the orchestrator failed: ${(e as Error).message}`);
    }
  }

  /**
   * What the roles' sessions open in: index/README.md (a writable root must exist), the
   * orchestrator's index files and, on a repository, the Solver's checkout and the Verifiers'
   * (at the commit under review, else the branch's newest, until a round moves it).
   */
  private async prepareWorkspaces(): Promise<Step> {
    await RunStore.ensureIndexReadme(this.store.dir);
    // The index exists before any role runs, so it is the orchestrator's file from the start.
    if (!existsSync(path.join(this.store.dir, CLAIMS_INDEX))) await writeIndexes(this.store);
    const repo = this.store.state.repo;
    if (!repo) return undefined;
    const checkout = await ensureCheckout(repo, this.store.dir);
    if ("error" in checkout) return this.finish("failed", checkout.error.message);
    if (this.store.state.verifiers === 0) return undefined;
    const pending = this.store.state.pending;
    const review = await prepareReview(
      repo,
      this.store.dir,
      pending?.type === "verification" && pending.commit ? pending.commit : repo.head_commit,
    );
    return "error" in review ? this.finish("failed", review.error.message) : undefined;
  }

  private startHeartbeat(): void {
    this.beat = setInterval(() => {
      const now = Date.now();
      const roles = this.board.snapshot();
      // A beat still writing (a loaded machine) is not joined by another: they would queue on the lease's lock.
      if (!this.beating) {
        this.beating = true;
        void this.store
          .heartbeat(now - this.lastBeat, { activity: roles, tokens_used: this.board.tokensUsed })
          .catch((e: Error) => {
            // Another process took the run over: stop after the current step, writing nothing more.
            if (e instanceof LeaseLostError) this.stopper.abort();
          })
          .finally(() => (this.beating = false));
        this.lastBeat = now;
      }
      const st = this.store.state;
      this.o.report({
        type: "heartbeat",
        turns: st.turns,
        max_turns: st.max_turns,
        elapsed_ms: now - this.started,
        last_activity: this.lastActivity,
        tokens_used: this.board.tokensUsed,
        max_tokens: st.max_tokens,
        roles,
      });
      void this.store
        .log({ type: "heartbeat", turns: st.turns, tokens_used: this.board.tokensUsed, roles })
        .catch(() => {});
    }, this.o.heartbeatMs ?? 15_000);
    this.beat.unref?.();
  }

  /** Opens (or reopens from their rollouts) every role's session, registered in the hub. */
  private async openRoles(): Promise<Step> {
    for (const role of roleNames(this.store.state.verifiers)) {
      const opened = await this.openRole(role, this.store.rolloutOf(role));
      if ("error" in opened)
        return this.finish("failed", `could not start the ${role} session: ${opened.error.message}`);
    }
    return undefined;
  }

  /** Opens one role's session (`resume`: from its rollout), registers it and records it in run.json. */
  private async openRole(role: string, resume: string | undefined): Promise<Result<void>> {
    let sessionId: string | undefined;
    let history: () => readonly ResponseItem[] = () => [];
    const fanout = this.hub.emitterFor(() => sessionId);
    const ws = roleWorkspace(role, this.store.dir, this.store.state.repo);
    const opened = await openSession({
      home: this.o.home,
      config: { ...(this.o.roleConfig?.(role) ?? this.o.config), approval_policy: "never" },
      cwd: ws.cwd,
      writableRoots: ws.writableRoots,
      readOnlyPaths: ws.readOnlyPaths,
      env: ws.env,
      resume,
      codeMode: this.o.tools?.codeMode,
      capabilityRoots: this.o.tools?.capabilityRoots,
      environments: this.o.tools?.environments,
      executorName: this.o.tools?.executorName,
      model: this.o.modelFor?.(role, resume ? () => history() : undefined),
      approver: nonInteractiveApprover,
      source: "infty",
      infty: { runId: this.store.id, role },
      resumeCommand: `relay infty resume ${this.store.id}`,
      memories: this.o.memories,
      extraInstructions: [
        rolePrompt(role),
        `## Where you work\n${ws.where}`,
        `You are the ${role} of run ${this.store.id}. Objective:\n${this.store.state.objective}`,
      ],
      emit: (e) => {
        fanout(e);
        this.onRoleEvent(role, e);
      },
    });
    if ("error" in opened) return opened;
    sessionId = opened.ok.id;
    history = () => opened.ok.agent.history;
    this.hub.register(this.store.id, role, opened.ok);
    await this.store.setRole(role, { session_id: opened.ok.id, rollout_path: opened.ok.rolloutPath });
    return ok(undefined);
  }

  /**
   * A Verifier that passed is replaced by a fresh session, so the next claim meets eyes that
   * have not seen the last one; one that failed keeps its context to re-check the fix.
   */
  private async refreshPassedVerifiers(verdicts: RoleVerdict[]): Promise<void> {
    for (const v of verdicts.filter((x) => x.verdict === "pass")) {
      const old = this.hub.get(this.store.id, v.role);
      if (!old) continue;
      await old.handle.close();
      this.hub.unregister(this.store.id, v.role);
      const opened = await this.openRole(v.role, undefined);
      if ("error" in opened) throw new Error(`could not start a fresh ${v.role} session: ${opened.error.message}`);
    }
  }

  private onRoleEvent(role: string, e: SessionEvent): void {
    this.board.onEvent(role, e);
    const logged = roleLogEvent(e);
    if (logged) void this.store.log({ type: "role", role, event: logged }).catch(() => {});
    if (e.type === "structured_output_unsupported") this.goPromptOnly(role, e.reason);
    if (e.type === "context_compacted" && e.summary)
      void this.store
        .keepSummary(role, e.summary)
        .catch((err: Error) =>
          this.o.report({ type: "warning", message: `the ${role}'s handoff summary was not saved: ${err.message}` }),
        );
    if (e.type === "tool_call") this.lastActivity = `${role} ▸ ${e.name}: ${e.display.split("\n")[0]!.slice(0, 80)}`;
    const failedTool = e.type === "tool_result" && !e.success;
    if (failedTool && this.o.failOnToolError && !this.toolFailure) {
      this.toolFailure = `the ${role}'s ${e.name} call failed: ${e.output.split("\n").find((l) => l.trim()) ?? "(no output)"}`;
      this.stopper.abort();
    }
    if (
      failedTool ||
      e.type === "tool_call" ||
      e.type === "warning" ||
      e.type === "error" ||
      e.type === "context_compacted" ||
      e.type === "assistant_message"
    )
      this.o.report({ type: "role_event", role, event: e });
  }

  /** Said once per role, in progress and in the run log; recorded so a resumed run sends no schema either. */
  private goPromptOnly(role: string, reason: string): void {
    if (this.store.state.prompt_only_roles.includes(role)) return;
    const message = `the model server refused structured output for the ${role} (${reason.slice(0, 300)}); the ${role} goes on with the JSON contract in its prompt only, for the rest of the run`;
    this.o.report({ type: "warning", message });
    void this.store.log({ type: "structured_output_unsupported", role, reason }).catch(() => {});
    void this.store.update({ prompt_only_roles: [...this.store.state.prompt_only_roles, role] }).catch(() => {});
  }

  /** The structured-output request for a role's turns, unless its server refused one. */
  private turnOptions(role: string): TurnOptions {
    return this.store.state.prompt_only_roles.includes(role) ? {} : { outputSchema: OUTPUT_SCHEMAS[roleKind(role)] };
  }

  private budgetDetail(): string {
    const st = this.store.state;
    const raise = `raise it with: relay infty resume ${this.store.id} --max-turns N`;
    if (this.silentTurns >= 2 || (this.silentTurns > 0 && this.silentTurns >= st.turns)) {
      return `the Solver sent no usable signal in its last ${this.silentTurns} turns (last problem: ${this.lastProblem}), and the turn budget (${st.max_turns} Solver turns) ran out; its model may not follow the JSON contract: see relay infty logs ${this.store.id}, or try another model; to go on anyway, ${raise}`;
    }
    return `the turn budget (${st.max_turns} Solver turns) is used up; ${raise}`;
  }

  private async step(): Promise<Step> {
    if (this.toolFailure) return this.finish("failed", this.toolFailure);
    if (this.stop.aborted)
      return this.finish(
        "interrupted",
        `stopped after the current step; resume with: relay infty resume ${this.store.id}`,
      );
    const st = this.store.state;
    if (st.turns >= st.max_turns) return this.finish("budget_exhausted", this.budgetDetail());
    if (st.max_tokens !== null && this.board.tokensUsed >= st.max_tokens) {
      return this.finish(
        "budget_exhausted",
        `the token budget (${st.max_tokens} tokens) is used up (${this.board.tokensUsed} used); raise it with: relay infty resume ${this.store.id} --max-tokens N`,
      );
    }
    if (st.wall_ms_used + (Date.now() - this.lastBeat) >= st.max_wall_ms)
      return this.finish(
        "budget_exhausted",
        `the wall-clock budget is used up; raise it with: relay infty resume ${this.store.id} --max-wall <duration, e.g. 2h>`,
      );
    const pending = st.pending;
    if (!pending)
      return this.finish("failed", "the run has nothing pending and no deliverable; its state is inconsistent");
    if (pending.type === "solver_message") return this.solverStep(pending.message);
    if (pending.type === "direction") return this.directionStep(pending.prompt);
    return this.verificationStep(pending);
  }

  /**
   * Hands `message` to `role` once, across crashes. If the previous process had this very
   * message in flight, the role's rollout says whether to use the answer it recorded, continue
   * the turn, or send the message; otherwise the in-flight record is written first.
   */
  private async exchange(
    role: string,
    message: string,
    attempt: 1 | 2,
    send: (text: string | undefined) => Promise<Result<Reply>>,
  ): Promise<Result<Reply>> {
    const handle = this.hub.get(this.store.id, role)!.handle;
    const prior = this.takeResumed(role, message, attempt);
    if (prior) {
      const d = await deliveryOf(handle.rolloutPath, prior.rollout_offset, message);
      if (d.state === "answered") return ok({ text: d.reply, aborted: false });
      if (d.state === "in_progress") return send(undefined);
    }
    const record = { role, attempt, message, rollout_offset: await rolloutOffset(handle.rolloutPath) };
    // Read and written in one synchronous step: Verifiers asked in parallel each add their own.
    await this.store.update({
      inflight: [...inflightList(this.store.state.inflight).filter((r) => r.role !== role), record],
    });
    return send(message);
  }

  private takeResumed(role: string, message: string, attempt: 1 | 2): Inflight | undefined {
    const at = this.resumed.findIndex((r) => r.role === role && r.attempt === attempt && r.message === message);
    return at === -1 ? undefined : this.resumed.splice(at, 1)[0];
  }

  private async solverTurn(text: string | undefined): Promise<Result<Reply>> {
    const r = await this.hub.postUserTurn(this.store.id, "solver", text, this.stop, this.turnOptions("solver"));
    return "error" in r ? r : ok({ text: r.ok.finalMessage, aborted: r.ok.status === "aborted" });
  }

  private async roleTurn(role: string, text: string | undefined): Promise<Result<Reply>> {
    const r = await this.hub.awaitFirstAssistant(
      this.store.id,
      role,
      text,
      this.o.roleTimeoutMs ?? this.store.state.role_timeout_ms ?? 20 * 60_000,
      this.stop,
      this.turnOptions(role),
    );
    return "error" in r ? r : ok({ text: r.ok, aborted: false });
  }

  /** Saves the next pending action in one write that also clears the in-flight record; then the index and a checkpoint. */
  private async handoff(
    t: Transition,
    patch: Partial<RunMeta> = {},
    trigger: CheckpointTrigger = "handoff",
  ): Promise<undefined> {
    await this.store.update({
      ...patch,
      pending: t.pending,
      inflight: null,
      handoffs: this.store.state.handoffs + 1,
      tokens_used: this.board.tokensUsed,
      activity: this.board.snapshot(),
    });
    await this.store.log({ type: "handoff", from: t.from, to: t.to, summary: t.summary });
    this.o.report({ type: "handoff", from: t.from, to: t.to, summary: t.summary });
    await this.checkpoint(trigger, `${t.from} → ${t.to}: ${t.summary}`);
    return undefined;
  }

  private async checkpoint(trigger: CheckpointTrigger, summary: string): Promise<void> {
    // A pack under way finishes before a checkpoint writes to the repository.
    await this.packing;
    const r = await recordHandoff(this.store, trigger, summary, this.kept);
    for (const message of r.warnings) this.o.report({ type: "warning", message });
    if (!r.checkpoint) return;
    this.o.report({ type: "checkpoint", name: r.checkpoint.id, trigger, summary });
    await this.store.log({ type: "checkpoint", name: r.checkpoint.id, trigger, summary });
    if (looseWritten() >= PACK_LOOSE) this.pack(true);
    this.collectNowAndThen();
  }

  /**
   * A full garbage collection every GC_EVERY handoffs, between steps. Measured over 400 turns:
   * the live heap stays at 14-16 MB, but left to itself Bun lets dead model requests (each a
   * JSON of the Solver's whole history) pile up to 60 MB and keeps the pages, so the driver's
   * RSS drifted up by a third; collected now and then it stays flat.
   */
  private collectNowAndThen(): void {
    if (++this.sinceGc < GC_EVERY) return;
    this.sinceGc = 0;
    (globalThis as { Bun?: { gc(full: boolean): void } }).Bun?.gc(true);
  }

  /**
   * Packs the checkpoints' repository in the background, in a child process (pack-run.ts says
   * why); `force`: this process wrote enough loose objects, else only if enough are there.
   */
  private pack(force: boolean): void {
    packedNow();
    this.packing = packInChild(this.o.home, this.store, force).then((why) => {
      if (why)
        this.o.report({
          type: "warning",
          message: `could not pack the run's checkpoint repository (its loose objects stay as they are): ${why}`,
        });
    });
  }

  private async solverStep(message: string): Promise<Step> {
    this.lastActivity = "solver working";
    const r = await this.exchange("solver", message, 1, (text) => this.solverTurn(text));
    const turns = this.store.state.turns + 1;
    if ("error" in r || r.ok.aborted) {
      await this.store.update({ turns });
      return "error" in r ? this.finish("failed", `the Solver's turn failed: ${r.error.message}`) : undefined;
    }
    const read = readContract(SolverSignalSchema, r.ok.text);
    const signal = "ok" in read ? read.ok : undefined;
    if (signal?.type === "final_delivery" && this.store.state.verified_at) return this.offerDelivery(signal, turns);
    const t = "ok" in read ? this.afterSignal(read.ok) : this.afterSilence(read.error.message, r.ok.text);
    if (t.pending.type !== "verification" || !this.store.state.repo) return this.handoff(t, { turns });
    // On a repository the Verifiers judge a commit: the checkout is committed first.
    const c = await this.commitWork(`verification of ${t.pending.claim_path}`, turns);
    if ("error" in c) return this.finish("failed", c.error.message);
    return this.handoff(
      { ...t, pending: { ...t.pending, commit: c.ok.commit }, summary: `${t.summary} at ${shortCommit(c.ok.commit)}` },
      { turns, repo: c.ok.repo },
    );
  }

  /**
   * Commits the Solver's checkout to the run's branch (after checking that this process still
   * drives the run) and logs it; the new head goes into run.json with the handoff that uses it.
   */
  private async commitWork(reason: string, turns: number): Promise<Result<{ commit: string; repo: RepoRecord }>> {
    const repo = this.store.state.repo!;
    await this.store.checkLease();
    const message = `relay infty ${this.store.id}: ${reason} (Solver turn ${turns})\n\nObjective: ${this.store.state.objective.split("\n")[0]!.slice(0, 200)}\nRun store: ${this.store.dir}\n`;
    const made = await commitCheckout(repo, this.store.dir, message);
    if ("error" in made)
      return err(
        made.error.code,
        `could not commit the run's checkout for ${reason}: ${made.error.message}; resume with: relay infty resume ${this.store.id}`,
      );
    await this.store.log({
      type: "commit",
      commit: made.ok.commit,
      branch: repo.branch,
      reason,
      changed: made.ok.changed,
    });
    return ok({ commit: made.ok.commit, repo: { ...repo, head_commit: made.ok.commit } });
  }

  /** What a Solver's signal asks for (a delivery after a passing verification excepted). */
  private afterSignal(signal: SolverSignal): Transition {
    this.nudges = 0;
    this.silentTurns = 0;
    if (signal.type === "direction_request")
      return {
        pending: { type: "direction", prompt: signal.prompt },
        from: "solver",
        to: "director",
        summary: signal.prompt.slice(0, 120),
      };
    if (signal.type === "verification_request") {
      return {
        pending: {
          type: "verification",
          claim_path: signal.claim_path,
          notes: signal.notes,
          final: false,
          verdicts: [],
        },
        from: "solver",
        to: "verifiers",
        summary: signal.claim_path,
      };
    }
    return rejected(
      "no claim has passed verification yet; send a verification_request first",
      "delivery before any passing verification rejected",
    );
  }

  /**
   * A Solver turn without a usable signal: a question in prose goes to the Director at once;
   * otherwise the Solver is told what was wrong, and after `maxNudges` such turns in a row the
   * Director steps in.
   */
  private afterSilence(problem: string, finalMessage: string): Transition {
    this.silentTurns++;
    this.lastProblem = problem;
    const last = finalMessage.slice(0, 4000);
    if (problem === "your reply had no JSON object" && asksQuestion(finalMessage)) {
      this.nudges = 0;
      return {
        pending: { type: "direction", prompt: proseQuestion(last) },
        from: "solver",
        to: "director",
        summary: "question in prose forwarded to the Director",
      };
    }
    if (++this.nudges > (this.o.maxNudges ?? 2)) {
      this.nudges = 0;
      const prompt = `The Solver stopped without a usable signal (${problem}). Its last message:\n${last}\nDecide how it should proceed.`;
      return {
        pending: { type: "direction", prompt },
        from: "solver",
        to: "director",
        summary: "stalled Solver backstopped by the Director",
      };
    }
    return {
      pending: { type: "solver_message", message: solverCorrective(problem, SHAPES.solver) },
      from: "orchestrator",
      to: "solver",
      summary: `no usable signal (${problem.slice(0, 80)}); told so`,
    };
  }

  /**
   * A delivery after a passing verification: its manifest is checked (on a repository the
   * checkout is committed and the branch's diff written beside it), then the Verifiers check the
   * deliverable itself.
   */
  private async offerDelivery(signal: Extract<SolverSignal, { type: "final_delivery" }>, turns: number): Promise<Step> {
    const where = await this.store.resolveInside(signal.deliverable_path);
    if ("error" in where) return this.handoff(rejected(where.error.message, where.error.message), { turns });
    const check = await checkDeliverable(where.ok, deliverableRules(this.store.state.repo));
    if ("error" in check)
      return this.handoff(rejected(check.error.message, "deliverable manifest rejected"), { turns });
    const pending: Pending = {
      type: "verification",
      claim_path: signal.deliverable_path,
      notes: signal.summary,
      final: true,
      verdicts: [],
    };
    const n = check.ok.entries.length;
    const files = n === 0 ? "README only" : `${n} file${n === 1 ? "" : "s"}, ${check.ok.totalBytes} bytes`;
    const summary = `final delivery ${signal.deliverable_path.replace(/\/*$/, "/")}: ${files}`;
    if (!this.store.state.repo) return this.handoff({ pending, from: "solver", to: "verifiers", summary }, { turns });
    const c = await this.commitWork("delivery", turns);
    if ("error" in c) return this.finish("failed", c.error.message);
    const diff = await this.writeBranchDiff(where.ok, c.ok.repo);
    if ("error" in diff) return this.finish("failed", diff.error.message);
    return this.handoff(
      {
        pending: { ...pending, commit: c.ok.commit },
        from: "solver",
        to: "verifiers",
        summary: `${summary}; commit ${shortCommit(c.ok.commit)} on ${c.ok.repo.branch}`,
      },
      { turns, repo: c.ok.repo },
    );
  }

  /** deliverable/branch.diff: the run's branch from its start to its head (what `relay infty diff` prints). */
  private async writeBranchDiff(deliverableDir: string, repo: RepoRecord): Promise<Result<void>> {
    const diff = await branchDiff(repo, repo.head_commit);
    if ("error" in diff)
      return err(diff.error.code, `could not write the branch's diff into ${deliverableDir}: ${diff.error.message}`);
    await writeFileAtomic(path.join(deliverableDir, BRANCH_DIFF_FILE), diff.ok);
    return ok(undefined);
  }

  /** The Verifiers passed the deliverable: checked once more, then accepted and the run complete in one write. */
  private async acceptDelivery(pending: Extract<Pending, { type: "verification" }>): Promise<Step> {
    const { claim_path: deliverablePath, notes: summary } = pending;
    const where = await this.store.resolveInside(deliverablePath);
    if ("error" in where) return this.handoff(rejected(where.error.message, "deliverable gone after its verification"));
    const check = await checkDeliverable(where.ok, deliverableRules(this.store.state.repo));
    if ("error" in check)
      return this.handoff(rejected(check.error.message, "deliverable changed during its verification"));
    const repo = this.store.state.repo;
    const commit = repo && pending.commit ? { branch: repo.branch, commit: pending.commit } : {};
    const what = commit.commit
      ? `commit ${commit.commit} on ${commit.branch}, deliverable ${where.ok}`
      : `deliverable ${where.ok}`;
    await this.store.note(
      "orchestrator",
      "final_delivery",
      `${what} accepted: ${check.ok.entries.length} files, ${check.ok.totalBytes} bytes`,
    );
    // One write: the deliverable is accepted and the run complete, or neither.
    await this.store.update({
      pending: null,
      inflight: null,
      handoffs: this.store.state.handoffs + 1,
      deliverable: { path: where.ok, summary, ...commit },
      status: "complete",
      status_detail: "verified deliverable accepted",
      tokens_used: this.board.tokensUsed,
    });
    await this.checkpoint(
      "delivery",
      `verifiers → orchestrator: ${commit.commit ? `commit ${shortCommit(commit.commit)} accepted` : `deliverable accepted (${check.ok.entries.length} file${check.ok.entries.length === 1 ? "" : "s"})`}`,
    );
    return this.finish("complete", "verified deliverable accepted", { deliverable: where.ok, summary, ...commit });
  }

  private async directionStep(prompt: string): Promise<Step> {
    // Notes a person left (relay infty note, or the serve page) go with the next request, once.
    const notes = await readOperatorNotes(this.store.dir);
    const fresh = notes.slice(this.store.state.operator_notes_delivered).map((n) => n.text);
    const payload = JSON.stringify(
      {
        type: "direction_request",
        prompt,
        objective: this.store.state.objective,
        ...(fresh.length ? { operator_notes: fresh } : {}),
      },
      null,
      2,
    );
    await this.store.log({ type: "direction_request", prompt });
    const d = await this.askJson("director", payload, DirectiveSchema);
    if ("error" in d) return d.error.code === "interrupted" ? undefined : this.finish("failed", d.error.message);
    await this.store.note("director", "directive", d.ok.directive);
    await this.store.log({ type: "directive", directive: d.ok.directive, rationale: d.ok.rationale ?? null });
    const message = JSON.stringify(
      { type: "directive", directive: d.ok.directive, rationale: d.ok.rationale ?? null },
      null,
      2,
    );
    return this.handoff(
      {
        pending: { type: "solver_message", message },
        from: "director",
        to: "solver",
        summary: d.ok.directive.slice(0, 120),
      },
      { operator_notes_delivered: notes.length },
    );
  }

  /**
   * All Verifiers at once, each with its own timeout; each verdict is saved as it comes, so a
   * resume asks only the rest. A final round checks the deliverable itself.
   */
  private async verificationStep(pending: Extract<Pending, { type: "verification" }>): Promise<Step> {
    const claim = pending.final
      ? await this.store.resolveInside(pending.claim_path)
      : await checkClaim(this.store.dir, pending.claim_path);
    if ("error" in claim) {
      await recordRound(this.store, {
        claim_path: pending.claim_path,
        overall: "fail",
        verdicts: [],
        problem: claim.error.message,
      });
      const message = JSON.stringify({
        type: "verification_feedback",
        overall: "fail",
        verdicts: [],
        problem: claim.error.message,
      });
      return this.handoff({
        pending: { type: "solver_message", message },
        from: "orchestrator",
        to: "solver",
        summary: claim.error.message,
      });
    }
    const repo = this.store.state.repo;
    if (repo && pending.commit) {
      // The Verifiers' checkout holds exactly the commit under review, nothing else.
      const review = await prepareReview(repo, this.store.dir, pending.commit);
      if ("error" in review)
        return this.finish("failed", `${review.error.message}; resume with: relay infty resume ${this.store.id}`);
    }
    const verdicts: RoleVerdict[] = [...pending.verdicts];
    const payload = verificationPayload(pending, this.store.state.objective, this.store.dir, repo);
    const waiting = roleNames(this.store.state.verifiers).filter(
      (role) => role.startsWith("verifier-") && !verdicts.some((v) => v.role === role),
    );
    const total = this.store.state.verifiers;
    this.lastActivity = `verification round: ${verdicts.length}/${total} verdicts in`;
    await Promise.all(
      waiting.map(async (role) => {
        await this.askVerifier(role, payload, pending, verdicts);
        this.lastActivity = `verification round: ${verdicts.length}/${total} verdicts in`;
      }),
    );
    if (this.stop.aborted || this.toolFailure) return undefined;
    return this.afterVerdicts(pending, verdicts);
  }

  /** One Verifier's verdict, recorded as it comes. An answer that is no usable verdict, or none in time, counts as a fail. */
  private async askVerifier(
    role: string,
    payload: string,
    pending: Extract<Pending, { type: "verification" }>,
    verdicts: RoleVerdict[],
  ): Promise<void> {
    const v = await this.askJson(role, payload, VerdictSchema);
    if ("error" in v && (v.error.code === "interrupted" || this.stop.aborted)) return;
    const verdict: RoleVerdict =
      "ok" in v
        ? { role, ...v.ok }
        : {
            role,
            verdict: "fail",
            reasons: [`the ${role} gave no usable verdict: ${v.error.message}`],
            suggestions: [],
          };
    if ("error" in v) this.o.report({ type: "warning", message: `${verdict.reasons[0]}; counted as a fail` });
    await this.serially(async () => {
      verdicts.push(verdict);
      this.o.report({ type: "verdict", role, verdict: verdict.verdict, reasons: verdict.reasons });
      await this.store.log({
        type: "verdict",
        role,
        verdict: verdict.verdict,
        reasons: verdict.reasons,
        claim_path: pending.claim_path,
        final: pending.final,
      });
      await this.store.note(role, "verdict", `${verdict.verdict}: ${verdict.reasons.join("; ")}`);
      await this.store.update({
        pending: { ...pending, verdicts: [...verdicts] },
        inflight: nonEmpty(inflightList(this.store.state.inflight).filter((r) => r.role !== role)),
      });
    });
  }

  private async afterVerdicts(
    pending: Extract<Pending, { type: "verification" }>,
    verdicts: RoleVerdict[],
  ): Promise<Step> {
    const st = this.store.state;
    const overall = aggregate(verdicts, st.consensus);
    const passes = verdicts.filter((v) => v.verdict === "pass").length;
    this.o.report({ type: "verification_summary", overall, passes, total: verdicts.length });
    await this.store.log({ type: "verification_summary", overall, passes, total: verdicts.length });
    // The index lists claims; the deliverable's own rounds are in the notes and the run log.
    if (!pending.final)
      await recordRound(this.store, {
        claim_path: pending.claim_path,
        overall,
        verdicts,
        ...(pending.commit ? { commit: pending.commit } : {}),
      });
    if (pending.final && overall === "pass") return this.acceptDelivery(pending);
    await this.refreshPassedVerifiers(verdicts);
    const feedback = JSON.stringify(
      { type: "verification_feedback", overall, consensus: st.consensus, final: pending.final, verdicts },
      null,
      2,
    );
    const finalize = st.repo ? REPO_FINALIZATION_PROMPT : FINALIZATION_PROMPT;
    const message = pending.final
      ? `${feedback}\n\n${REDELIVER_PROMPT}`
      : overall === "pass"
        ? `${feedback}\n\n${finalize}`
        : feedback;
    const patch = overall === "pass" ? { verified_at: new Date().toISOString() } : {};
    const summary = `${pending.final ? "deliverable " : ""}${overall} (${passes}/${verdicts.length} passed)`;
    return this.handoff(
      { pending: { type: "solver_message", message }, from: "verifiers", to: "solver", summary },
      patch,
      overall === "pass" ? "verification_pass" : "handoff",
    );
  }

  private async closeRoles(): Promise<void> {
    this.kept?.feed.close();
    await this.packing;
    for (const s of this.hub.sessions(this.store.id)) {
      await s.handle.close();
      this.hub.unregister(this.store.id, s.role);
    }
  }

  /** Runs `fn` after every earlier one: parallel Verifiers' notes and run.json writes go one at a time. */
  private serially(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => {});
    return next;
  }

  /** Asks a role for a JSON reply; one corrective retry on a malformed one (resumed where a crash left it). */
  private async askJson<T extends z.ZodType>(role: string, payload: string, schema: T): Promise<Result<z.output<T>>> {
    const shape = SHAPES[roleKind(role)];
    this.lastActivity = `waiting for ${role}`;
    const send = (text: string | undefined) => this.roleTurn(role, text);
    let corrective: string;
    const retried = this.resumed.find((r) => r.role === role && r.attempt === 2);
    if (retried) corrective = retried.message;
    else {
      const first = await this.exchange(role, payload, 1, send);
      if ("error" in first) return first;
      const parsed = readContract(schema, first.ok.text);
      if ("ok" in parsed) return parsed;
      this.o.report({
        type: "warning",
        message: `the ${role}'s reply could not be used (${parsed.error.message}); asking it once more`,
      });
      corrective = correctiveRetry(parsed.error.message, shape);
    }
    const second = await this.exchange(role, corrective, 2, send);
    if ("error" in second) return second;
    const parsed = readContract(schema, second.ok.text);
    if ("error" in parsed)
      return err(
        "malformed_reply",
        `the ${role} replied twice without following its JSON contract (${parsed.error.message}); its last reply: ${JSON.stringify(second.ok.text.slice(0, 300))}`,
      );
    return parsed;
  }

  private async finish(
    statusIn: InftyResult["status"],
    detailIn: string,
    extra: Partial<InftyResult> = {},
  ): Promise<Result<InftyResult>> {
    // A stop for a failed tool call can surface anywhere as a cancellation: report its cause.
    const stoppedByTool = this.toolFailure !== undefined && statusIn !== "complete";
    const status = stoppedByTool ? "failed" : statusIn;
    const detail = stoppedByTool ? `${this.toolFailure} (--fail-on-tool-error)` : detailIn;
    clearInterval(this.beat);
    const now = Date.now();
    try {
      await this.store.update({
        status,
        status_detail: detail,
        heartbeat_at: new Date(now).toISOString(),
        wall_ms_used: this.store.state.wall_ms_used + Math.max(0, now - this.lastBeat),
        tokens_used: this.board.tokensUsed,
        activity: this.board.snapshot(),
      });
      await this.store.log({
        type: "run_finished",
        status,
        detail,
        tokens_used: this.board.tokensUsed,
        roles: this.board.snapshot(),
      });
    } finally {
      await this.closeRoles();
    }
    log.info("run finished", { run_id: this.store.id, status, detail });
    this.o.report({
      type: "run_finished",
      run_id: this.store.id,
      status,
      detail,
      deliverable: extra.deliverable,
      summary: extra.summary,
    });
    return ok({ runId: this.store.id, dir: this.store.dir, status, detail, ...extra });
  }
}

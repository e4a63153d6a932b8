/**
 * The roles' sessions of a driven run: opening (or reopening from their rollouts) each role's
 * session in the hub, what their events do (progress, the run log, the activity board, a stop
 * for --fail-on-tool-error), and the exchanges with them: a message handed to a role once across
 * crashes, and a JSON reply asked for with one corrective retry.
 */

import type { z } from "zod";
import { roleKind } from "../../config/infty/index.ts";
import type { SessionEvent } from "../../contracts/events.ts";
import type { ResponseItem } from "../../model/items.ts";
import { nonInteractiveApprover } from "../../policy/approval.ts";
import type { TurnOptions } from "../../session/agent.ts";
import { openSession } from "../../session/runtime.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { roleLogEvent } from "../event-log.ts";
import { deliveryOf, rolloutOffset } from "../exchange.ts";
import { CrossSessionHub } from "../hub.ts";
import { correctiveRetry, DIRECTOR_PROMPT, SOLVER_PROMPT, VERIFIER_PROMPT } from "../prompts.ts";
import { roleSessionsDir, roleWorkspace } from "../role-workspace.ts";
import { type Inflight, inflightList, type RunStore } from "../run-store.ts";
import { OUTPUT_SCHEMAS, type RoleVerdict, readContract, SHAPES } from "../signals.ts";
import type { InftyOptions } from "./options.ts";
import type { RunPulse } from "./pulse.ts";

function rolePrompt(role: string): string {
  return { solver: SOLVER_PROMPT, director: DIRECTOR_PROMPT, verifier: VERIFIER_PROMPT }[roleKind(role)];
}

/** A role's answer: its final message, and whether Ctrl-C cut the turn short. */
export interface Reply {
  text: string;
  aborted: boolean;
}

export class RoleSessions {
  private readonly hub = new CrossSessionHub();
  private failure: string | undefined;
  /** What the previous process had in flight; each used once, by the exchange it belongs to. */
  private resumed: Inflight[];

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
    private readonly pulse: RunPulse,
    /** --fail-on-tool-error stops the run through this, as Ctrl-C does through o.signal. */
    private readonly stopper: AbortController,
    private readonly stop: AbortSignal,
  ) {
    this.resumed = inflightList(store.state.inflight);
  }

  /** The failed tool call that stops the run under --fail-on-tool-error, once there is one. */
  get toolFailure(): string | undefined {
    return this.failure;
  }

  /** Opens one role's session (`resume`: from its rollout), registers it and records it in run.json. */
  async openRole(role: string, resume: string | undefined): Promise<Result<void>> {
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
      // A fleet run's in its store, on the shared root, where the worker that takes it over resumes
      // them; a run of this host's in $RELAY_HOME/sessions, where relay sessions lists them.
      ...(this.o.fleetDb ? { rolloutDir: roleSessionsDir(this.store.dir) } : {}),
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
  async refreshPassedVerifiers(verdicts: RoleVerdict[]): Promise<void> {
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
    this.pulse.board.onEvent(role, e);
    const logged = roleLogEvent(e);
    if (logged) void this.store.log({ type: "role", role, event: logged }).catch(() => {});
    if (e.type === "structured_output_unsupported") this.goPromptOnly(role, e.reason);
    if (e.type === "context_compacted" && e.summary)
      void this.store
        .keepSummary(role, e.summary)
        .catch((err: Error) =>
          this.o.report({ type: "warning", message: `the ${role}'s handoff summary was not saved: ${err.message}` }),
        );
    if (e.type === "tool_call")
      this.pulse.lastActivity = `${role} ▸ ${e.name}: ${e.display.split("\n")[0]!.slice(0, 80)}`;
    const failedTool = e.type === "tool_result" && !e.success;
    if (failedTool && this.o.failOnToolError && !this.failure) {
      this.failure = `the ${role}'s ${e.name} call failed: ${e.output.split("\n").find((l) => l.trim()) ?? "(no output)"}`;
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

  /**
   * Hands `message` to `role` once, across crashes. If the previous process had this very
   * message in flight, the role's rollout says whether to use the answer it recorded, continue
   * the turn, or send the message; otherwise the in-flight record is written first.
   */
  async exchange(
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

  async solverTurn(text: string | undefined): Promise<Result<Reply>> {
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

  /** Asks a role for a JSON reply; one corrective retry on a malformed one (resumed where a crash left it). */
  async askJson<T extends z.ZodType>(role: string, payload: string, schema: T): Promise<Result<z.output<T>>> {
    const shape = SHAPES[roleKind(role)];
    this.pulse.lastActivity = `waiting for ${role}`;
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

  /** Closes every role's session and takes it out of the hub. */
  async close(): Promise<void> {
    for (const s of this.hub.sessions(this.store.id)) {
      await s.handle.close();
      this.hub.unregister(this.store.id, s.role);
    }
  }
}

/**
 * The driven run: the state machine that takes run.json's pending action, hands it to the role
 * it is for (the Solver, the Director, the Verifiers) and records the next one, until the run is
 * complete, fails, is stopped or runs out of budget. Its collaborators hold the rest: the roles'
 * sessions, the heartbeat, checkpoints, handoffs and the end, delivery and verification.
 */

import { existsSync } from "node:fs";
import path from "node:path";
import { roleNames } from "../../config/infty/index.ts";
import type { Result } from "../../util/result.ts";
import { writeIndexes } from "../index-files.ts";
import { CLAIMS_INDEX } from "../index-format.ts";
import { asksQuestion } from "../json-in-text.ts";
import { readOperatorNotes } from "../operator.ts";
import { proseQuestion, solverCorrective } from "../prompts.ts";
import { ensureCheckout, prepareReview } from "../repo/checkout.ts";
import { shortCommit } from "../repo/record.ts";
import { LeaseLostError, RunStore } from "../run-store.ts";
import { DirectiveSchema, readContract, SHAPES, type SolverSignal, SolverSignalSchema } from "../signals.ts";
import { RunCheckpoints } from "./checkpointing.ts";
import { RunDelivery } from "./delivery.ts";
import { RunLedger, rejected, type Step, type Transition } from "./ledger.ts";
import type { InftyOptions, InftyResult } from "./options.ts";
import { RunPulse } from "./pulse.ts";
import { RoleSessions } from "./role-sessions.ts";
import { RunVerification } from "./verification.ts";

export class InftyRun {
  /** --fail-on-tool-error stops the run through this, as Ctrl-C does through o.signal. */
  private readonly stopper = new AbortController();
  private readonly stop: AbortSignal;
  private nudges = 0;
  /** Solver turns in a row that ended without a usable signal, and what was wrong with the last. */
  private silentTurns = 0;
  private lastProblem = "";
  private readonly pulse: RunPulse;
  private readonly checkpoints: RunCheckpoints;
  private readonly roles: RoleSessions;
  private readonly ledger: RunLedger;
  private readonly delivery: RunDelivery;
  private readonly verification: RunVerification;

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
  ) {
    this.stop = AbortSignal.any([o.signal, this.stopper.signal]);
    this.pulse = new RunPulse(o, store, this.stopper);
    this.checkpoints = new RunCheckpoints(o, store);
    this.roles = new RoleSessions(o, store, this.pulse, this.stopper, this.stop);
    this.ledger = new RunLedger(o, store, this.pulse, this.checkpoints, this.roles);
    this.delivery = new RunDelivery(store, this.pulse, this.checkpoints, this.ledger);
    this.verification = new RunVerification(o, store, this.pulse, this.roles, this.ledger, this.delivery, this.stop);
  }

  async drive(): Promise<Result<InftyResult>> {
    this.pulse.start();
    try {
      await this.checkpoints.open();
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
        this.pulse.stop();
        await this.ledger.closeRoles();
        throw e;
      }
      return this.ledger.finish("failed", `the orchestrator failed: ${(e as Error).message}`);
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
    if ("error" in checkout) return this.ledger.finish("failed", checkout.error.message);
    if (this.store.state.verifiers === 0) return undefined;
    const pending = this.store.state.pending;
    const review = await prepareReview(
      repo,
      this.store.dir,
      pending?.type === "verification" && pending.commit ? pending.commit : repo.head_commit,
    );
    return "error" in review ? this.ledger.finish("failed", review.error.message) : undefined;
  }

  /** Opens (or reopens from their rollouts) every role's session, registered in the hub. */
  private async openRoles(): Promise<Step> {
    for (const role of roleNames(this.store.state.verifiers)) {
      const opened = await this.roles.openRole(role, this.store.rolloutOf(role));
      if ("error" in opened)
        return this.ledger.finish("failed", `could not start the ${role} session: ${opened.error.message}`);
    }
    return undefined;
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
    if (this.roles.toolFailure) return this.ledger.finish("failed", this.roles.toolFailure);
    if (this.stop.aborted)
      return this.ledger.finish(
        "interrupted",
        `stopped after the current step; resume with: relay infty resume ${this.store.id}`,
      );
    const st = this.store.state;
    if (st.turns >= st.max_turns) return this.ledger.finish("budget_exhausted", this.budgetDetail());
    if (st.max_tokens !== null && this.pulse.board.tokensUsed >= st.max_tokens) {
      return this.ledger.finish(
        "budget_exhausted",
        `the token budget (${st.max_tokens} tokens) is used up (${this.pulse.board.tokensUsed} used); raise it with: relay infty resume ${this.store.id} --max-tokens N`,
      );
    }
    if (st.wall_ms_used + (Date.now() - this.pulse.lastBeat) >= st.max_wall_ms)
      return this.ledger.finish(
        "budget_exhausted",
        `the wall-clock budget is used up; raise it with: relay infty resume ${this.store.id} --max-wall <duration, e.g. 2h>`,
      );
    const pending = st.pending;
    if (!pending)
      return this.ledger.finish("failed", "the run has nothing pending and no deliverable; its state is inconsistent");
    if (pending.type === "solver_message") return this.solverStep(pending.message);
    if (pending.type === "direction") return this.directionStep(pending.prompt);
    return this.verification.verificationStep(pending);
  }

  private async solverStep(message: string): Promise<Step> {
    this.pulse.lastActivity = "solver working";
    const r = await this.roles.exchange("solver", message, 1, (text) => this.roles.solverTurn(text));
    const turns = this.store.state.turns + 1;
    if ("error" in r || r.ok.aborted) {
      await this.store.update({ turns });
      return "error" in r ? this.ledger.finish("failed", `the Solver's turn failed: ${r.error.message}`) : undefined;
    }
    const read = readContract(SolverSignalSchema, r.ok.text);
    const signal = "ok" in read ? read.ok : undefined;
    if (signal?.type === "final_delivery" && this.store.state.verified_at)
      return this.delivery.offerDelivery(signal, turns);
    const t = "ok" in read ? this.afterSignal(read.ok) : this.afterSilence(read.error.message, r.ok.text);
    if (t.pending.type !== "verification" || !this.store.state.repo) return this.ledger.handoff(t, { turns });
    // On a repository the Verifiers judge a commit: the checkout is committed first.
    const c = await this.delivery.commitWork(`verification of ${t.pending.claim_path}`, turns);
    if ("error" in c) return this.ledger.finish("failed", c.error.message);
    return this.ledger.handoff(
      { ...t, pending: { ...t.pending, commit: c.ok.commit }, summary: `${t.summary} at ${shortCommit(c.ok.commit)}` },
      { turns, repo: c.ok.repo },
    );
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
    const d = await this.roles.askJson("director", payload, DirectiveSchema);
    if ("error" in d) return d.error.code === "interrupted" ? undefined : this.ledger.finish("failed", d.error.message);
    await this.store.note("director", "directive", d.ok.directive);
    await this.store.log({ type: "directive", directive: d.ok.directive, rationale: d.ok.rationale ?? null });
    const message = JSON.stringify(
      { type: "directive", directive: d.ok.directive, rationale: d.ok.rationale ?? null },
      null,
      2,
    );
    return this.ledger.handoff(
      {
        pending: { type: "solver_message", message },
        from: "director",
        to: "solver",
        summary: d.ok.directive.slice(0, 120),
      },
      { operator_notes_delivered: notes.length },
    );
  }
}

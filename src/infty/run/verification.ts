/**
 * A run's verification rounds: all Verifiers asked at once about a claim (or, in the final round,
 * the deliverable), each verdict recorded as it comes, and what the verdicts together decide.
 */

import path from "node:path";
import { roleNames } from "../../config/infty/index.ts";
import { checkClaim } from "../claims.ts";
import { recordRound } from "../index-files.ts";
import {
  FINAL_CHECK,
  FINALIZATION_PROMPT,
  REDELIVER_PROMPT,
  REPO_FINAL_CHECK,
  REPO_FINALIZATION_PROMPT,
} from "../prompts.ts";
import { prepareReview } from "../repo/checkout.ts";
import { type RepoRecord, reviewDir } from "../repo/record.ts";
import { inflightList, type Pending, type RunStore } from "../run-store.ts";
import { aggregate, type RoleVerdict, VerdictSchema } from "../signals.ts";
import type { RunDelivery } from "./delivery.ts";
import type { RunLedger, Step } from "./ledger.ts";
import type { InftyOptions } from "./options.ts";
import type { RunPulse } from "./pulse.ts";
import type { RoleSessions } from "./role-sessions.ts";

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

export class RunVerification {
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
    private readonly pulse: RunPulse,
    private readonly roles: RoleSessions,
    private readonly ledger: RunLedger,
    private readonly delivery: RunDelivery,
    private readonly stop: AbortSignal,
  ) {}

  /**
   * All Verifiers at once, each with its own timeout; each verdict is saved as it comes, so a
   * resume asks only the rest. A final round checks the deliverable itself.
   */
  async verificationStep(pending: Extract<Pending, { type: "verification" }>): Promise<Step> {
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
      return this.ledger.handoff({
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
        return this.ledger.finish(
          "failed",
          `${review.error.message}; resume with: relay infty resume ${this.store.id}`,
        );
    }
    const verdicts: RoleVerdict[] = [...pending.verdicts];
    const payload = verificationPayload(pending, this.store.state.objective, this.store.dir, repo);
    const waiting = roleNames(this.store.state.verifiers).filter(
      (role) => role.startsWith("verifier-") && !verdicts.some((v) => v.role === role),
    );
    const total = this.store.state.verifiers;
    this.pulse.lastActivity = `verification round: ${verdicts.length}/${total} verdicts in`;
    await Promise.all(
      waiting.map(async (role) => {
        await this.askVerifier(role, payload, pending, verdicts);
        this.pulse.lastActivity = `verification round: ${verdicts.length}/${total} verdicts in`;
      }),
    );
    if (this.stop.aborted || this.roles.toolFailure) return undefined;
    return this.afterVerdicts(pending, verdicts);
  }

  /** One Verifier's verdict, recorded as it comes. An answer that is no usable verdict, or none in time, counts as a fail. */
  private async askVerifier(
    role: string,
    payload: string,
    pending: Extract<Pending, { type: "verification" }>,
    verdicts: RoleVerdict[],
  ): Promise<void> {
    const v = await this.roles.askJson(role, payload, VerdictSchema);
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
    if (pending.final && overall === "pass") return this.delivery.acceptDelivery(pending);
    await this.roles.refreshPassedVerifiers(verdicts);
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
    return this.ledger.handoff(
      { pending: { type: "solver_message", message }, from: "verifiers", to: "solver", summary },
      patch,
      overall === "pass" ? "verification_pass" : "handoff",
    );
  }

  /** Runs `fn` after every earlier one: parallel Verifiers' notes and run.json writes go one at a time. */
  private serially(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => {});
    return next;
  }
}

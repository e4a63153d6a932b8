/**
 * A run's delivery: a Solver's final delivery offered to the Verifiers (its manifest checked; on
 * a repository the checkout committed and the branch's diff written beside it), the Solver's
 * checkout committed to the run's branch, and a deliverable the Verifiers passed accepted, with
 * the run complete in the same write.
 */

import path from "node:path";
import { err, ok, type Result } from "../../util/result.ts";
import { checkDeliverable, type DeliverableRules } from "../deliverable.ts";
import { writeFileAtomic } from "../durable.ts";
import { branchDiff, commitCheckout } from "../repo/checkout.ts";
import { BRANCH_DIFF_FILE, type RepoRecord, shortCommit } from "../repo/record.ts";
import type { Pending, RunStore } from "../run-store.ts";
import type { SolverSignal } from "../signals.ts";
import type { RunCheckpoints } from "./checkpointing.ts";
import { type RunLedger, rejected, type Step } from "./ledger.ts";
import type { RunPulse } from "./pulse.ts";

/** On a repository the delivery is a commit: deliverable/ may hold only its README, beside the orchestrator's diff. */
export function deliverableRules(repo: RepoRecord | undefined): DeliverableRules {
  return repo ? { allowEmptyManifest: true, orchestratorFiles: [BRANCH_DIFF_FILE] } : {};
}

export class RunDelivery {
  constructor(
    private readonly store: RunStore,
    private readonly pulse: RunPulse,
    private readonly checkpoints: RunCheckpoints,
    private readonly ledger: RunLedger,
  ) {}

  /**
   * A delivery after a passing verification: its manifest is checked (on a repository the
   * checkout is committed and the branch's diff written beside it), then the Verifiers check the
   * deliverable itself.
   */
  async offerDelivery(signal: Extract<SolverSignal, { type: "final_delivery" }>, turns: number): Promise<Step> {
    const where = await this.store.resolveInside(signal.deliverable_path);
    if ("error" in where) return this.ledger.handoff(rejected(where.error.message, where.error.message), { turns });
    const check = await checkDeliverable(where.ok, deliverableRules(this.store.state.repo));
    if ("error" in check)
      return this.ledger.handoff(rejected(check.error.message, "deliverable manifest rejected"), { turns });
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
    if (!this.store.state.repo)
      return this.ledger.handoff({ pending, from: "solver", to: "verifiers", summary }, { turns });
    const c = await this.commitWork("delivery", turns);
    if ("error" in c) return this.ledger.finish("failed", c.error.message);
    const diff = await this.writeBranchDiff(where.ok, c.ok.repo);
    if ("error" in diff) return this.ledger.finish("failed", diff.error.message);
    return this.ledger.handoff(
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
  async acceptDelivery(pending: Extract<Pending, { type: "verification" }>): Promise<Step> {
    const { claim_path: deliverablePath, notes: summary } = pending;
    const where = await this.store.resolveInside(deliverablePath);
    if ("error" in where)
      return this.ledger.handoff(rejected(where.error.message, "deliverable gone after its verification"));
    const check = await checkDeliverable(where.ok, deliverableRules(this.store.state.repo));
    if ("error" in check)
      return this.ledger.handoff(rejected(check.error.message, "deliverable changed during its verification"));
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
      tokens_used: this.pulse.board.tokensUsed,
    });
    await this.checkpoints.checkpoint(
      "delivery",
      `verifiers → orchestrator: ${commit.commit ? `commit ${shortCommit(commit.commit)} accepted` : `deliverable accepted (${check.ok.entries.length} file${check.ok.entries.length === 1 ? "" : "s"})`}`,
    );
    return this.ledger.finish("complete", "verified deliverable accepted", {
      deliverable: where.ok,
      summary,
      ...commit,
    });
  }

  /**
   * Commits the Solver's checkout to the run's branch (after checking that this process still
   * drives the run) and logs it; the new head goes into run.json with the handoff that uses it.
   */
  async commitWork(reason: string, turns: number): Promise<Result<{ commit: string; repo: RepoRecord }>> {
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
}

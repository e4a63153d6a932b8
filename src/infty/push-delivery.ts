/**
 * A run started with --push sends its verified commit to the repository's origin once it is
 * complete, still under its lease; the push is recorded in events.jsonl. A failed push leaves
 * the run complete (its branch is intact) and says how to push by hand.
 */
import type { Result } from "../util/result.ts";
import { pushBranch } from "./repo/push.ts";
import type { InftyOptions, InftyResult } from "./run/options.ts";
import type { RunStore } from "./run-store.ts";

export async function pushDelivery(
  o: Pick<InftyOptions, "report">,
  store: RunStore,
  r: Result<InftyResult>,
): Promise<Result<InftyResult>> {
  const repo = store.state.repo;
  const commit = store.state.deliverable?.commit;
  if (!("ok" in r) || r.ok.status !== "complete" || !repo?.push || !commit) return r;
  const pushed = await pushBranch(repo, commit);
  if ("error" in pushed) {
    o.report({ type: "warning", message: pushed.error.message });
    await store.log({ type: "pushed", ok: false, branch: repo.branch, commit, text: pushed.error.message });
    return { ok: { ...r.ok, pushError: pushed.error.message } };
  }
  const text = `pushed ${commit.slice(0, 12)} to ${pushed.ok.branch} on ${pushed.ok.remote}`;
  o.report({ type: "pushed", ...pushed.ok });
  await store.log({ type: "pushed", ok: true, branch: repo.branch, commit, text });
  return { ok: { ...r.ok, pushed: pushed.ok } };
}

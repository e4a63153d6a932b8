/** The text `relay infty status` prints: the run's state, budgets, and each role's model, tools and rollout. */

import { formatCapabilityRoot, recordedRoot } from "../../config/capability-root.ts";
import { type RoleModelRecord, type RunSettings, roleNames } from "../../config/infty/index.ts";
import { activityLines } from "../../infty/activity.ts";
import type { Liveness } from "../../infty/liveness.ts";
import { checkoutDir, type RepoRecord, shortCommit } from "../../infty/repo/index.ts";
import type { RunMeta } from "../../infty/run-format.ts";
import { formatDuration } from "../../util/duration.ts";

/** `gpt-5 (openai-responses, effort high)`; the URL and key variable when they are not the defaults. */
export function describeModel(m: RoleModelRecord): string {
  const extra = [
    m.model_provider,
    m.base_url,
    m.model_reasoning_effort ? `effort ${m.model_reasoning_effort}` : undefined,
    m.api_key_env !== "OPENAI_API_KEY" ? `key $${m.api_key_env}` : undefined,
  ];
  return `${m.model} (${extra.filter(Boolean).join(", ")})`;
}

/** A role's recorded model; older runs recorded one for all roles. */
function modelOf(s: RunSettings | undefined, role: string): string {
  const own = s?.roles?.[role];
  if (own) return describeModel(own);
  if (!s) return "(not recorded)";
  return `${s.model} (${[s.model_provider, s.base_url, s.model_reasoning_effort ? `effort ${s.model_reasoning_effort}` : undefined].filter(Boolean).join(", ")})`;
}

function toolsLine(s: RunSettings | undefined): string {
  if (!s) return "(not recorded)";
  const parts = [
    `executor ${s.executor ? `${JSON.stringify(s.executor)}` : "local"}${s.executor_name ? ` named ${s.executor_name}` : ""}`,
    `code mode ${s.code_mode ? "on" : "off"}`,
    s.capability_roots?.length
      ? `capability roots ${s.capability_roots
          .flatMap((r) => recordedRoot(r) ?? [])
          .map(formatCapabilityRoot)
          .join(" ")}`
      : undefined,
    s.environments?.length
      ? `environments ${s.environments.map((e) => `${e.name}=${JSON.stringify(e.command)}`).join(" ")}`
      : undefined,
    `sandbox ${s.sandbox_mode}${s.sandbox_mechanism ? ` (${s.sandbox_mechanism}${s.sandbox_best_effort ? ", best effort" : ""})` : ""}`,
  ];
  return parts.filter(Boolean).join("; ");
}

/** Where a run on a repository works, and how far its branch got. */
function repoLines(r: RepoRecord, dir: string, s: Readonly<RunMeta>): string[] {
  const verified = s.deliverable?.commit
    ? `; verified delivery ${shortCommit(s.deliverable.commit)} (merge it: relay infty apply ${s.run_id})`
    : "";
  return [
    `repository:  ${r.path} (from ${r.base_branch ?? "a detached HEAD"} at ${shortCommit(r.base_commit)}${r.start_commit !== r.base_commit ? ` + uncommitted changes ${shortCommit(r.start_commit)}` : ""})`,
    `branch:      ${r.branch} at ${shortCommit(r.head_commit)}${verified}`,
    `checkout:    ${checkoutDir(dir)}`,
  ];
}

export function statusLines(s: Readonly<RunMeta>, dir: string, live?: Liveness): string[] {
  const rollouts = new Map(s.roles.map((r) => [r.role, r.rollout_path]));
  const driver = live?.live && live.pid ? ` (driven by pid ${live.pid})` : "";
  return [
    `run:         ${s.run_id} (${dir})`,
    `status:      ${live?.stale ? live.stale : `${s.status}${driver}${s.status_detail ? ` — ${s.status_detail}` : ""}`}`,
    ...(s.repo ? repoLines(s.repo, dir, s) : []),
    `objective:   ${s.objective.split("\n")[0]}`,
    `turns:       ${s.turns}/${s.max_turns}; wall ${Math.round(s.wall_ms_used / 1000)}s used of ${formatDuration(s.max_wall_ms)}`,
    `role answer: within ${s.role_timeout_ms ? formatDuration(s.role_timeout_ms) : "20m (default)"}`,
    `verifiers:   ${s.verifiers} (${s.consensus} must pass)`,
    `tokens:      ${s.tokens_used}${s.max_tokens ? ` of ${s.max_tokens}` : " (no budget)"}`,
    `tools:       ${toolsLine(s.settings)}`,
    `heartbeat:   ${s.heartbeat_at}`,
    `pending:     ${s.pending ? s.pending.type : "nothing"}`,
    `checkpoint:  ${s.last_checkpoint ?? "none"}`,
    `deliverable: ${s.deliverable ? s.deliverable.path : "not yet"}`,
    "roles:",
    ...roleNames(s.verifiers).map(
      (role) =>
        `  ${role.padEnd(11)} ${modelOf(s.settings, role)}${rollouts.get(role) ? `\n  ${"".padEnd(11)} ${rollouts.get(role)}` : ""}`,
    ),
    ...(s.activity.length
      ? [
          `activity at the heartbeat ${s.heartbeat_at}:`,
          ...activityLines(s.activity, Date.parse(s.heartbeat_at)).map((l) => `  ${l}`),
        ]
      : []),
  ];
}

/**
 * The progress lines `relay infty run` and `resume` print on stderr: a short run tag, each
 * handoff, verdict, checkpoint and warning, the Solver's own words (the first line of its
 * messages that are not signals), a heartbeat only when something changed (or every few
 * minutes), and a summary block when the run ends. Pure: events in, lines out.
 */
import { activityLines } from "../../infty/activity.ts";
import type { InftyEvent } from "../../infty/orchestrator.ts";
import { shortCommit } from "../../infty/repo/index.ts";
import type { RunMeta } from "../../infty/run-format.ts";
import { formatDuration, formatElapsed } from "../../util/duration.ts";

/** A heartbeat with nothing new is printed at most this often. */
export const QUIET_HEARTBEAT_MS = 5 * 60_000;

/** `[infty …ab12]`: a long id's last part (a generated id's random end); a short id as it is. */
export function runTag(runId: string): string {
  if (runId.length <= 16) return `[infty ${runId}]`;
  const last = runId.split(/[-_.]/).at(-1)!;
  return `[infty …${last.length >= 3 && last.length <= 8 ? last : runId.slice(-6)}]`;
}

/** The first line of a role's message that is prose, not a JSON signal; undefined for a signal. */
function prose(text: string): string | undefined {
  const t = text.trim();
  if (!t || t.startsWith("{") || t.startsWith("```")) return undefined;
  const line = t
    .split("\n")
    .find((l) => l.trim())!
    .trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

export class ProgressLines {
  private tag = "[infty]";
  private lastBeat: { key: string; at: number } | undefined;
  readonly rounds = { pass: 0, fail: 0 };
  checkpoints = 0;

  /** The lines for one event (most give one, a changed heartbeat several, many none). */
  lines(e: InftyEvent, now = Date.now()): string[] {
    const w = (s: string) => `${this.tag} ${s}`;
    switch (e.type) {
      case "run_started":
        this.tag = runTag(e.run_id);
        return [
          w(`${e.resumed ? "resumed" : "started"} run ${e.run_id} in ${e.dir}`),
          ...(e.repo
            ? [
                w(
                  `working on ${e.repo.path} in its own checkout ${e.repo.checkout}, branch ${e.repo.branch} (your checkout is not touched)`,
                ),
              ]
            : []),
        ];
      case "role_event":
        return this.roleLines(e.role, e.event).map(w);
      case "handoff":
        return [w(`${e.from} → ${e.to}: ${e.summary}`)];
      case "verdict":
        return [w(`${e.role}: ${e.verdict}${e.reasons.length ? ` (${e.reasons[0]})` : ""}`)];
      case "verification_summary":
        this.rounds[e.overall]++;
        return [w(`verification ${e.overall}: ${e.passes}/${e.total} passed`)];
      case "checkpoint":
        this.checkpoints++;
        return [w(`checkpoint ${e.name} (${e.trigger})`)];
      case "heartbeat":
        return this.heartbeat(e, now).map(w);
      case "warning":
        return [w(`warning: ${e.message}`)];
      case "pushed":
        return [w(`pushed ${e.commit.slice(0, 12)} to ${e.branch} on ${e.remote}`)];
      case "run_finished":
        return [w(`${e.status}: ${e.detail}`)];
    }
  }

  private roleLines(role: string, e: Extract<InftyEvent, { type: "role_event" }>["event"]): string[] {
    if (e.type === "tool_call") return [`${role} ▸ ${e.name}: ${e.display.split("\n")[0]!.slice(0, 120)}`];
    if (e.type === "tool_result")
      return [`${role} ✗ ${e.name}: ${(e.output.split("\n").find((l) => l.trim()) ?? "").slice(0, 300)}`];
    if (e.type === "assistant_message" && role === "solver") {
      const said = prose(e.text);
      return said ? [`solver: ${said}`] : [];
    }
    if (e.type === "warning") return [`${role}: ${e.message}`];
    if (e.type === "context_compacted") return [`${role}: context compacted`];
    // A role's failed turn ends in the run's own failure line (or a Verifier's counted fail): said once, there.
    return [];
  }

  /** A heartbeat's lines, if the turn, the activity or a role's state changed, or it has been quiet for long. */
  private heartbeat(e: Extract<InftyEvent, { type: "heartbeat" }>, now: number): string[] {
    const key = JSON.stringify([e.turns, e.last_activity, e.roles.map((r) => [r.role, r.turn, r.doing])]);
    if (this.lastBeat && this.lastBeat.key === key && now - this.lastBeat.at < QUIET_HEARTBEAT_MS) return [];
    this.lastBeat = { key, at: now };
    const tokens = `${e.tokens_used}${e.max_tokens ? `/${e.max_tokens}` : ""} tokens`;
    return [
      `… turn ${e.turns}/${e.max_turns}, ${formatElapsed(e.elapsed_ms)}, ${tokens}, ${e.last_activity}`,
      ...activityLines(e.roles, now).map((l) => `    ${l}`),
    ];
  }

  /** The block printed when the run ends: what it came to, from its final run.json. */
  summary(s: Readonly<RunMeta>, dir: string): string[] {
    const roles = s.activity.map((a) => `${a.role} ${a.tokens}`).join(", ");
    const lines = [
      // Why it ended is the line just above; the summary says what it came to.
      `run ${s.run_id}: ${s.status}`,
      `  wall time   ${formatElapsed(s.wall_ms_used)} of ${formatDuration(s.max_wall_ms)}`,
      `  turns       ${s.turns} Solver turns of ${s.max_turns}; ${s.handoffs} handoffs`,
      `  tokens      ${s.tokens_used}${s.max_tokens ? ` of ${s.max_tokens}` : ""}${roles ? ` (this process: ${roles})` : ""}`,
      `  rounds      ${this.rounds.pass + this.rounds.fail} verification rounds here: ${this.rounds.pass} passed, ${this.rounds.fail} failed`,
      `  checkpoints ${this.checkpoints} taken here; newest ${s.last_checkpoint ?? "none"}`,
    ];
    if (s.repo) lines.push(`  branch      ${s.repo.branch} at ${shortCommit(s.repo.head_commit)} in ${s.repo.path}`);
    if (s.deliverable?.commit)
      lines.push(
        `  verified    commit ${s.deliverable.commit} (see it: relay infty diff ${s.run_id}; merge it: relay infty apply ${s.run_id})`,
      );
    lines.push(`  deliverable ${s.deliverable ? s.deliverable.path : "none yet"}`, `  run store   ${dir}`);
    return lines;
  }
}

/**
 * What each role of a run is doing, from its session's events: its turn number, what it waits
 * on ("waiting for model (12 s)", "running exec_command: npm test"), since when, and the tokens
 * it used. The orchestrator shows it in progress lines and saves it in run.json with every
 * heartbeat, so `relay infty status` in another terminal sees the same.
 */
import { z } from "zod";
import type { SessionEvent } from "../contracts/events.ts";
import { lazySchema } from "../util/lazy-schema.ts";

export const RoleActivitySchema = lazySchema(() =>
  z.object({
    role: z.string(),
    /** User turns this process has posted to the role. */
    turn: z.number().int().min(0),
    doing: z.string(),
    since: z.string(),
    tokens: z.number().int().min(0),
  }),
);
export type RoleActivity = z.infer<typeof RoleActivitySchema>;

interface State {
  turn: number;
  doing: string;
  since: number;
  tokens: number;
}

export class ActivityBoard {
  private readonly roles = new Map<string, State>();
  /** Tokens used before this process (a resumed run's total so far). */
  constructor(private readonly tokensBefore = 0) {}

  private stateOf(role: string): State {
    let s = this.roles.get(role);
    if (!s) this.roles.set(role, (s = { turn: 0, doing: "idle", since: Date.now(), tokens: 0 }));
    return s;
  }

  private set(s: State, doing: string): void {
    if (s.doing !== doing) s.since = Date.now();
    s.doing = doing;
  }

  onEvent(role: string, e: SessionEvent): void {
    const s = this.stateOf(role);
    switch (e.type) {
      case "turn_started":
        s.turn++;
        return this.set(s, "waiting for model");
      case "tool_call":
        return this.set(s, `running ${e.name}: ${e.display.split("\n")[0]!.slice(0, 60)}`);
      case "tool_result":
        return this.set(s, "waiting for model");
      case "context_compacted":
        return this.set(s, "waiting for model");
      case "turn_completed":
      case "turn_aborted":
        return this.set(s, "idle");
      case "token_usage":
        s.tokens += e.usage.total_tokens;
        return;
      default:
        return;
    }
  }

  /** Tokens all roles used in the whole run. */
  get tokensUsed(): number {
    let n = this.tokensBefore;
    for (const s of this.roles.values()) n += s.tokens;
    return n;
  }

  snapshot(): RoleActivity[] {
    return [...this.roles.entries()].map(([role, s]) => ({
      role,
      turn: s.turn,
      doing: s.doing,
      since: new Date(s.since).toISOString(),
      tokens: s.tokens,
    }));
  }
}

/** One line per role, as progress and `relay infty status` print them. */
export function activityLines(activity: RoleActivity[], now = Date.now()): string[] {
  return activity.map(
    (a) =>
      `${a.role.padEnd(11)} turn ${a.turn}: ${a.doing} (${formatSince(now - Date.parse(a.since))}), ${a.tokens} tokens`,
  );
}

function formatSince(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

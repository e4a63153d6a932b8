/**
 * CrossSessionHub: the registry that joins an infty run's sessions. It maps {run_id, role} and
 * {session_id} to live sessions, posts user turns, waits for a turn's first assistant message
 * and fans out each session's events. It is orchestration plumbing: no model sees it as a tool.
 */

import type { SessionEvent } from "../contracts/events.ts";
import type { TurnOptions, TurnOutcome } from "../session/agent.ts";
import type { SessionHandle } from "../session/handle.ts";
import { err, ok, type Result } from "../util/result.ts";

export interface HubSession {
  runId: string;
  role: string;
  handle: SessionHandle;
}

type Listener = (e: SessionEvent) => void;

export class CrossSessionHub {
  private readonly byRole = new Map<string, HubSession>();
  private readonly byId = new Map<string, HubSession>();
  private readonly listeners = new Map<string, Set<Listener>>();

  private static key(runId: string, role: string): string {
    return `${runId}\0${role}`;
  }

  register(runId: string, role: string, handle: SessionHandle): HubSession {
    const s = { runId, role, handle };
    this.byRole.set(CrossSessionHub.key(runId, role), s);
    this.byId.set(handle.id, s);
    return s;
  }

  /** Called when a session is dropped (closed): it stops being reachable. */
  unregister(runId: string, role: string): void {
    const s = this.byRole.get(CrossSessionHub.key(runId, role));
    if (!s) return;
    this.byRole.delete(CrossSessionHub.key(runId, role));
    this.byId.delete(s.handle.id);
    this.listeners.delete(s.handle.id);
  }

  get(runId: string, role: string): HubSession | undefined {
    return this.byRole.get(CrossSessionHub.key(runId, role));
  }

  bySessionId(id: string): HubSession | undefined {
    return this.byId.get(id);
  }

  sessions(runId: string): HubSession[] {
    return [...this.byRole.values()].filter((s) => s.runId === runId);
  }

  /** The emit callback a session is opened with: it feeds stream_events subscribers. */
  emitterFor(sessionIdRef: () => string | undefined): (e: SessionEvent) => void {
    return (e) => {
      const id = sessionIdRef();
      if (!id) return;
      for (const l of this.listeners.get(id) ?? []) l(e);
    };
  }

  /** Subscribes to a session's events; returns the unsubscribe function. */
  streamEvents(sessionId: string, listener: Listener): () => void {
    let set = this.listeners.get(sessionId);
    if (!set) this.listeners.set(sessionId, (set = new Set()));
    set.add(listener);
    return () => set!.delete(listener);
  }

  /** Posts a user turn to a role and resolves when the turn ends. */
  async postUserTurn(
    runId: string,
    role: string,
    text: string | undefined,
    signal: AbortSignal,
    opts: TurnOptions = {},
  ): Promise<Result<TurnOutcome>> {
    const s = this.get(runId, role);
    if (!s) return err("no_session", `run ${runId} has no live ${role} session`);
    return s.handle.runTurn(text, signal, opts);
  }

  /**
   * Posts a turn (`text` undefined: continues the unfinished one) and resolves with the turn's
   * final message, or its first assistant message if it has no final one; fails after
   * `timeoutMs` (the turn is aborted then).
   */
  async awaitFirstAssistant(
    runId: string,
    role: string,
    text: string | undefined,
    timeoutMs: number,
    signal: AbortSignal,
    opts: TurnOptions = {},
  ): Promise<Result<string>> {
    const s = this.get(runId, role);
    if (!s) return err("no_session", `run ${runId} has no live ${role} session`);
    const ctrl = new AbortController();
    const onAbort = () => ctrl.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    let first: string | undefined;
    const off = this.streamEvents(s.handle.id, (e) => {
      if (e.type === "assistant_message" && first === undefined) first = e.text;
    });
    const timer = setTimeout(() => ctrl.abort(), timeoutMs);
    try {
      const r = await s.handle.runTurn(text, ctrl.signal, opts);
      if ("error" in r) return r;
      if (r.ok.status === "aborted") {
        return signal.aborted
          ? err("interrupted", `${role} turn interrupted`)
          : err("timeout", `${role} gave no answer within ${timeoutMs} ms`);
      }
      return ok(r.ok.finalMessage || first || "");
    } finally {
      clearTimeout(timer);
      off();
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/**
 * A cell's yield/observe state machine: one observer at a time waits for the next yield, the
 * final response once it is decided, or the timeout that yields; a yield the script asks for
 * with no observer waiting is kept for the next one. The cell closes once its final response
 * was handed out and its notifications are settled.
 */

import type { ContentItem, RuntimeResponse } from "../../contracts/code-mode.ts";
import { err, ok, type Result } from "../../util/result.ts";

interface Observer {
  resolve(r: RuntimeResponse): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class CellReplies {
  private decided: RuntimeResponse | undefined;
  private delivered = false;
  private observer: Observer | undefined;
  private yieldRequested = false;
  private closeWhenDrained = false;

  constructor(
    private readonly cellId: string,
    /** The output since the last reply. */
    private readonly drain: () => ContentItem[],
    private readonly notesPending: () => number,
    private readonly onClosed: () => void,
  ) {}

  /** The final response, once decided. */
  get final(): RuntimeResponse | undefined {
    return this.decided;
  }

  /**
   * The cell's next yield, result or termination. `onResponse` hears it synchronously, at the
   * moment it is decided (the host writes it in the same turn); the promise settles after.
   */
  observe(
    yieldTimeMs: number,
    onResponse?: (r: RuntimeResponse) => void,
  ): Result<Promise<RuntimeResponse>, "busy_observer"> {
    if (this.observer) return err("busy_observer", `exec cell ${this.cellId} already has an active observer`);
    const now = (r: RuntimeResponse) => {
      onResponse?.(r);
      return ok(Promise.resolve(r));
    };
    if (this.decided) return now(this.deliverFinal());
    if (this.yieldRequested) {
      this.yieldRequested = false;
      return now(this.yielded());
    }
    return ok(
      new Promise<RuntimeResponse>((resolvePromise) => {
        const resolve = (r: RuntimeResponse) => {
          onResponse?.(r);
          resolvePromise(r);
        };
        const obs: Observer = { resolve, timer: undefined };
        obs.timer = setTimeout(() => {
          if (this.observer !== obs) return;
          this.observer = undefined;
          resolve(this.yielded());
        }, yieldTimeMs);
        this.observer = obs;
      }),
    );
  }

  private yielded(): RuntimeResponse {
    return { Yielded: { cell_id: this.cellId, content_items: this.drain() } };
  }

  /** Hands out the final response; the cell closes once its notifications are settled too. */
  deliverFinal(): RuntimeResponse {
    const r = this.decided!;
    if (!this.delivered) {
      this.delivered = true;
      if (this.notesPending() === 0) queueMicrotask(this.onClosed);
      else this.closeWhenDrained = true;
    }
    return r;
  }

  /** The script asked to yield: the waiting observer gets the output now, else the next one does. */
  requestYield(): void {
    const obs = this.observer;
    if (!obs) {
      this.yieldRequested = true;
      return;
    }
    clearTimeout(obs.timer);
    this.observer = undefined;
    obs.resolve(this.yielded());
  }

  /** Decides the final response (the first one decided stays); false when one already was. */
  decide(r: RuntimeResponse): boolean {
    if (this.decided) return false;
    this.decided = r;
    return true;
  }

  /** Hands the final response to the waiting observer, if there is one. */
  answerObserver(): void {
    const obs = this.observer;
    if (!obs) return;
    this.observer = undefined;
    clearTimeout(obs.timer);
    obs.resolve(this.deliverFinal());
  }

  /** A terminate after the end: a pending observer gets the final response; the terminate caller gets it too. */
  finalForTerminate(): RuntimeResponse {
    const obs = this.observer;
    if (obs) {
      this.observer = undefined;
      clearTimeout(obs.timer);
      obs.resolve(this.decided!);
    }
    return this.deliverFinal();
  }

  /** A notification settled: closes the cell when it was the last one the final response waited for. */
  noteSettled(): void {
    if (this.closeWhenDrained && this.notesPending() === 0) {
      this.closeWhenDrained = false;
      this.onClosed();
    }
  }
}

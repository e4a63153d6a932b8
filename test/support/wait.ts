/**
 * Waiting in tests without fixed sleeps or time bounds: a test waits for the event itself (a
 * promise, a value pushed by a handler) and the test runner's timeout bounds every wait. Only a
 * condition that no event announces is polled, by `waitFor`.
 */

/** How often `waitFor` looks again at the least; not a bound: it looks until the condition holds. */
const POLL_MS = 10;
/**
 * A look that takes a while (a query, a walk of a directory) is repeated after ten times its own
 * duration, up to this: looking keeps to about a tenth of a core, which the suite's parallel
 * workers need (it is CPU-bound on two cores).
 */
const MAX_POLL_MS = 200;
/** A wait this long is probably stuck: say which one, so the runner's timeout is not a mystery. */
const NOTE_AFTER_MS = 10_000;

/** Writes "still waiting for <what>" to stderr once if the wait lasts long; decides nothing. */
function noteIfSlow(what: string): () => void {
  const t = setTimeout(() => process.stderr.write(`still waiting for ${what}\n`), NOTE_AFTER_MS);
  (t as { unref?: () => void }).unref?.();
  return () => clearTimeout(t);
}

/** `p`'s value; `what` names the awaited event in the diagnostic should it never come. */
export async function until<T>(p: Promise<T>, what: string): Promise<T> {
  const done = noteIfSlow(what);
  try {
    return await p;
  } finally {
    done();
  }
}

/** Resolves once `cond` holds, looking again every few milliseconds; for conditions no event announces (a process gone, a file's state). */
export async function waitFor(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const done = noteIfSlow(what);
  try {
    for (;;) {
      const started = performance.now();
      if (await cond()) return;
      const interval = Math.min(MAX_POLL_MS, Math.max(POLL_MS, 10 * (performance.now() - started)));
      await new Promise((r) => setTimeout(r, interval));
    }
  } finally {
    done();
  }
}

/** A promise and the function that resolves it, for an event handler to announce the event. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Values an event handler pushes, taken in order by the test: `next()` waits for the next one. */
export class Inbox<T> {
  private readonly items: T[] = [];
  private readonly waiters: Array<(value: T) => void> = [];

  push(value: T): void {
    const w = this.waiters.shift();
    if (w) w(value);
    else this.items.push(value);
  }

  next(): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift()!);
    return new Promise((r) => this.waiters.push(r));
  }
}

/**
 * A verdict of command safety, and the small combinators the checks build theirs with: a
 * refusal carries the reason the approval prompt shows.
 */

export type Safety = { safe: true } | { safe: false; reason: string };

export const SAFE: Safety = { safe: true };
export const ask = (reason: string): Safety => ({ safe: false, reason });
/** Scripts nested deeper than this (substitutions, `bash -c`, eval) ask. */
export const MAX_DEPTH = 8;

/** The first verdict that is not safe, evaluating lazily. */
export function first(...checks: Array<() => Safety>): Safety {
  for (const check of checks) {
    const v = check();
    if (!v.safe) return v;
  }
  return SAFE;
}

/** A refusal from inside `where` (a substitution, a here-document, `bash -c`), saying so. */
export function within(where: string, v: Safety): Safety {
  return v.safe ? v : ask(`in ${where}: ${v.reason}`);
}

/**
 * What a handoff's index and checkpoint cost in file-system work: files and folders stat'ed
 * or listed, files read, files written. Counted where the work is done, so a test can check
 * that a handoff of an unchanged store costs the same in a store of 50 files as in one of
 * 5,000 (a count, never a time; test/infty/handoff-work.test.ts).
 */
export interface Work {
  statted: number;
  listed: number;
  read: number;
  written: number;
}

const counts: Work = { statted: 0, listed: 0, read: 0, written: 0 };

/** Adds to the counts (called by the index and the checkpoint snapshotter). */
export function count(kind: keyof Work, n = 1): void {
  counts[kind] += n;
}

/** The counts now; the difference of two of these is the work done in between. */
export function workSoFar(): Work {
  return { ...counts };
}

export function workBetween(before: Work, after: Work): Work {
  return {
    statted: after.statted - before.statted,
    listed: after.listed - before.listed,
    read: after.read - before.read,
    written: after.written - before.written,
  };
}

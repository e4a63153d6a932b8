/**
 * `relay run --resume` without an id, on a terminal: a numbered list of the newest sessions;
 * a number picks one, Enter the newest, q (or end of input) cancels.
 */
import { listSessions, ownSessions, type SessionSummary } from "../rollout/summary.ts";
import { alignRows, sessionCells } from "./session-format.ts";

/** Sessions offered at most. */
export const PICKER_SIZE = 10;

export type PickAnswer = { index: number } | { cancel: true } | { again: string };

/** What an answer to the picker means, for a list of `count` sessions. */
export function parsePick(answer: string, count: number): PickAnswer {
  const a = answer.trim().toLowerCase();
  if (a === "") return { index: 0 };
  if (a === "q" || a === "quit") return { cancel: true };
  const n = /^\d+$/.test(a) ? Number(a) : NaN;
  if (Number.isInteger(n) && n >= 1 && n <= count) return { index: n - 1 };
  return { again: `type a number from 1 to ${count}, Enter for the newest, or q to cancel` };
}

export type PickResult = { picked: SessionSummary } | { none: "empty" | "cancelled" };

/** Lists the newest readable sessions on `output` and asks which to resume. */
export async function pickSession(
  home: string,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream & { columns?: number },
): Promise<PickResult> {
  // Unreadable files cannot be resumed: look a little further for readable ones.
  // An infty run's role sessions are its run's to continue (relay infty resume): not offered.
  const { sessions: recent } = await listSessions(home, { limit: PICKER_SIZE * 2, filter: ownSessions });
  const sessions = recent.filter((s) => s.error === null).slice(0, PICKER_SIZE);
  if (sessions.length === 0) return { none: "empty" };
  const rows = alignRows(sessions.map(sessionCells), (output.columns ?? 120) - 6);
  output.write(
    `Recent sessions, newest first:\n${rows.map((r, i) => `${String(i + 1).padStart(4)}  ${r}`).join("\n")}\n`,
  );
  // Loaded here: node:readline costs every relay run milliseconds at start-up.
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input, output });
  // End of input (Ctrl-D) cancels instead of leaving the question waiting.
  const closed = new Promise<null>((resolve) => rl.once("close", () => resolve(null)));
  try {
    for (;;) {
      const answer = await Promise.race([
        rl.question(`Resume which? [1-${sessions.length}, Enter = 1, q = cancel]: `).catch(() => null),
        closed,
      ]);
      if (answer === null) return { none: "cancelled" };
      const pick = parsePick(answer, sessions.length);
      if ("index" in pick) return { picked: sessions[pick.index]! };
      if ("cancel" in pick) return { none: "cancelled" };
      output.write(`${pick.again}\n`);
    }
  } finally {
    rl.close();
  }
}

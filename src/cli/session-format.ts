/** How saved sessions look on a terminal: rows of `relay sessions list` and the resume picker. */
import os from "node:os";
import type { SessionSummary } from "../rollout/summary.ts";
import { oneLine } from "../util/clip.ts";

const p2 = (n: number) => String(n).padStart(2, "0");

/** `YYYY-MM-DD HH:MM` in local time. */
export function localMinute(d: Date): string {
  return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}`;
}

/** `~` for the home directory; a long path keeps its end. */
export function shortPath(p: string, max = 40, home = os.homedir()): string {
  const short = home && (p === home || p.startsWith(home + "/")) ? "~" + p.slice(home.length) : p;
  return short.length <= max ? short : "…" + short.slice(short.length - max + 1);
}

export function turnsText(s: SessionSummary): string {
  if (s.turns === null) return "-";
  return s.turns_complete ? String(s.turns) : `${s.turns}+`;
}

/** The columns of one session: started, turns, model, cwd; then the prompt, or why the file is unreadable. */
export function sessionCells(s: SessionSummary): { cells: string[]; text: string } {
  const started = localMinute(new Date(s.started_at));
  if (s.error !== null) return { cells: [started, "-", "-", "-"], text: `unreadable: ${s.error}` };
  const forked = s.forked_from_id ? `[fork of ${s.forked_from_id.slice(0, 8)}…] ` : "";
  const role = s.infty ? `[infty ${s.infty.run_id}: ${s.infty.role}] ` : s.source === "infty" ? "[infty role] " : "";
  return {
    cells: [started, turnsText(s), s.model ?? "-", shortPath(s.cwd ?? "-")],
    text: role + forked + (s.first_prompt ?? "(no prompt)"),
  };
}

/**
 * Aligned rows: the cells padded to the widest of each column, then the free text, cut so the
 * row fits `width` characters (at least 20 characters of text are kept). A `header` row (the
 * columns' names) comes first, aligned with them.
 */
export function alignRows(
  rows: Array<{ cells: string[]; text: string }>,
  width: number,
  header?: { cells: string[]; text: string },
): string[] {
  if (header) rows = [header, ...rows];
  const widths: number[] = [];
  for (const r of rows) r.cells.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => {
    const lead = r.cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
    return `${lead}  ${oneLine(r.text, Math.max(20, width - lead.length - 2))}`.trimEnd();
  });
}

/** The terminal's width, or a width for pipes and files. */
export function outputWidth(stream: NodeJS.WriteStream): number {
  return stream.isTTY && stream.columns ? stream.columns : 160;
}

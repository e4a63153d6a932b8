/**
 * What `relay memories schedule` installs: one shell line that runs consolidate from cron (or a
 * systemd user timer) exactly as a person would, with nothing assumed of the environment cron
 * gives it (`env -i`, PATH=/usr/bin:/bin, no HOME): the binary by its absolute path, the relay
 * home spelled out, the log folder made first. `--help`, the docs and the installed entry all
 * come from these functions.
 */
import { err, ok, type Result } from "../util/result.ts";

/** Marks our crontab line, so install replaces it and --remove finds it. */
export const CRON_MARKER = "# relay memories schedule";
export const TIMER_NAME = "relay-memories";

export interface Every {
  /** As given, for messages: `30m`, `2h`, `1d`. */
  text: string;
  unit: "m" | "h" | "d";
  n: number;
}

const EVERY_HELP =
  "give minutes that divide an hour (5m, 10m, 15m, 20m, 30m), hours that divide a day (1h, 2h, 3h, 4h, 6h, 8h, 12h) or 1d";

/** `--every`: an interval cron and systemd can both keep exactly. */
export function parseEvery(text: string): Result<Every> {
  const m = /^\s*(\d+)\s*(m|min|h|d)\s*$/.exec(text);
  if (!m) return err("usage", `--every ${text}: not an interval; ${EVERY_HELP}`);
  const n = Number(m[1]);
  const unit = (m[2] === "min" ? "m" : m[2]) as Every["unit"];
  const fits = unit === "m" ? n >= 5 && 60 % n === 0 : unit === "h" ? n >= 1 && 24 % n === 0 : n === 1;
  if (!fits) return err("usage", `--every ${text}: cron cannot keep that interval exactly; ${EVERY_HELP}`);
  return ok({ text: `${n}${unit}`, unit, n });
}

/** Single-quoted for sh: safe for any path. */
export function shQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface ScheduleTarget {
  /** The argv that starts this relay (the compiled binary, or a runtime and its script). */
  self: string[];
  /** RELAY_HOME, absolute. */
  home: string;
}

/** The shell line a scheduler runs: make the log folder, consolidate, append to the log. */
export function consolidateLine(t: ScheduleTarget): string {
  const logs = `${t.home}/logs`;
  const command = [...t.self, "memories", "consolidate"].map(shQuote).join(" ");
  return `mkdir -p ${shQuote(logs)} && RELAY_HOME=${shQuote(t.home)} ${command} >> ${shQuote(`${logs}/memories.log`)} 2>&1`;
}

/** The crontab line: schedule, command, marker. */
export function cronLine(t: ScheduleTarget, every: Every): string {
  return `${cronSchedule(every)} ${consolidateLine(t)} ${CRON_MARKER}`;
}

function cronSchedule(e: Every): string {
  if (e.unit === "m") return `*/${e.n} * * * *`;
  if (e.unit === "h") return e.n === 1 ? "0 * * * *" : `0 */${e.n} * * *`;
  return "0 3 * * *";
}

/** systemd's OnCalendar for the same interval. */
export function onCalendar(e: Every): string {
  if (e.unit === "m") return `*:0/${e.n}`;
  if (e.unit === "h") return e.n === 1 ? "hourly" : `0/${e.n}:00`;
  return "*-*-* 03:00:00";
}

/** The two user units of the systemd timer: a oneshot service running the same line, and its timer. */
export function systemdUnits(t: ScheduleTarget, every: Every): { service: string; timer: string } {
  const service = [
    "[Unit]",
    "Description=relay memories consolidate (relay memories schedule)",
    "",
    "[Service]",
    "Type=oneshot",
    `ExecStart=/bin/sh -c ${systemdQuote(consolidateLine(t))}`,
    "",
  ].join("\n");
  const timer = [
    "[Unit]",
    `Description=relay memories consolidate every ${every.text}`,
    "",
    "[Timer]",
    `OnCalendar=${onCalendar(every)}`,
    "Persistent=true",
    "",
    "[Install]",
    "WantedBy=timers.target",
    "",
  ].join("\n");
  return { service, timer };
}

/** A double-quoted systemd argument: backslashes, quotes, `$` and `%` escaped. */
function systemdQuote(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\$/g, "$$$$").replace(/%/g, "%%")}"`;
}

/** A crontab's text with our line (if any) replaced by `line` (or removed when undefined). */
export function withCronLine(crontab: string, line: string | undefined): string {
  const kept = crontab.split("\n").filter((l) => l.trim() !== "" && !l.endsWith(CRON_MARKER));
  if (line) kept.push(line);
  return kept.length ? `${kept.join("\n")}\n` : "";
}

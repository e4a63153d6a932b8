/**
 * A date's fields in local time, without paying for the zone database when the zone is UTC.
 * The first local-time call in a Bun process (`getHours`, `getTimezoneOffset`, ...) loads ICU's
 * time-zone data: about 6 ms of CPU, paid by every `relay run` for its rollout's file name. Most
 * servers and containers run in UTC; there the UTC fields are the local ones, and telling so costs
 * one readlink of /etc/localtime (or a look at TZ). Anywhere else the Date getters answer.
 */
import { readlinkSync } from "node:fs";

export interface LocalFields {
  year: number;
  /** 1–12. */
  month: number;
  day: number;
  hours: number;
  minutes: number;
  seconds: number;
}

/** Zone names that are UTC (TZ values, and /etc/localtime's target by its last parts). */
const UTC_NAMES = new Set([
  "UTC",
  "UTC0",
  "Etc/UTC",
  "UCT",
  "Etc/UCT",
  "GMT",
  "GMT0",
  "Etc/GMT",
  "Universal",
  "Etc/Universal",
  "Zulu",
  "Etc/Zulu",
]);

let zoneIsUtc: boolean | undefined;

/** Whether this process's local zone is UTC, as far as TZ and /etc/localtime tell cheaply (false when unsure). */
export function localZoneIsUtc(env: NodeJS.ProcessEnv = process.env, localtime = "/etc/localtime"): boolean {
  const tz = env.TZ;
  if (tz !== undefined) return UTC_NAMES.has(tz.replace(/^:/, ""));
  let target: string;
  try {
    target = readlinkSync(localtime);
  } catch {
    return false; // not a symlink (a copied zone file) or absent: the zone database decides
  }
  const parts = target.split("/");
  return UTC_NAMES.has(parts.slice(-1).join("/")) || UTC_NAMES.has(parts.slice(-2).join("/"));
}

/** `at`'s local fields; `utc` is whether the local zone is UTC (this process's, found once, by default). */
export function localFields(at: Date, utc: boolean = (zoneIsUtc ??= localZoneIsUtc())): LocalFields {
  if (utc) {
    return {
      year: at.getUTCFullYear(),
      month: at.getUTCMonth() + 1,
      day: at.getUTCDate(),
      hours: at.getUTCHours(),
      minutes: at.getUTCMinutes(),
      seconds: at.getUTCSeconds(),
    };
  }
  return {
    year: at.getFullYear(),
    month: at.getMonth() + 1,
    day: at.getDate(),
    hours: at.getHours(),
    minutes: at.getMinutes(),
    seconds: at.getSeconds(),
  };
}

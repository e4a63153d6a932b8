/** relay's log file as tests read it: $RELAY_HOME/logs/relay.log, one JSON record per line. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";

export interface LogLine {
  time: string;
  level: string;
  pid: number;
  service: string;
  msg: string;
  fields?: Record<string, unknown>;
}

export const logFile = (home: string) => path.join(home, "logs", "relay.log");

/** Every line of a log file, each parsed (a torn or interleaved line fails here). */
export function logLines(file: string): LogLine[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l, i) => {
      try {
        return JSON.parse(l) as LogLine;
      } catch {
        assert.fail(`${path.basename(file)} line ${i + 1} is not JSON: ${l.slice(0, 200)}`);
      }
    });
}

/** The log's line formats: the JSON record, the human stderr line, and bounded, redacted fields. */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const MAX_STRING = 4000;
const MAX_STACK = 16_000;
const MAX_LINE = 64 * 1024;

export function jsonLine(
  time: Date,
  level: LogLevel,
  service: string,
  msg: string,
  fields: LogFields | undefined,
): string {
  const record: Record<string, unknown> = {
    time: time.toISOString(),
    level,
    pid: process.pid,
    service,
    msg: cut(msg, MAX_STRING),
  };
  if (fields && Object.keys(fields).length > 0) record.fields = fields;
  let line = JSON.stringify(record);
  if (line.length > MAX_LINE) {
    record.fields = { truncated: `fields dropped: the line was ${line.length} characters` };
    line = JSON.stringify(record);
  }
  return line + "\n";
}

/** `relay[PID] HH:MM:SS.mmm LEVEL service: msg k=v ...`, one line (stacks stay in the file). */
export function humanLine(
  time: Date,
  level: LogLevel,
  service: string,
  msg: string,
  fields: LogFields | undefined,
): string {
  const hms = time.toTimeString().slice(0, 8) + "." + String(time.getMilliseconds()).padStart(3, "0");
  let line = `relay[${process.pid}] ${hms} ${level.toUpperCase()} ${service}: ${msg.replace(/\n/g, " ")}`;
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === "stack") continue;
    const value = v !== null && typeof v === "object" && "message" in v ? (v as { message: unknown }).message : v;
    const text = typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
    line += ` ${k}=${text}`;
  }
  return line + "\n";
}

/** A line of a child's stderr that is a record it mirrored (see humanLine). */
const HUMAN_LINE = /^relay\[\d+\] \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR) /;
const HUMAN_PREFIX = "relay[";

/**
 * Splits text read from a child's stderr into its mirrored log lines (`log`) and everything else
 * (`other`). A trailing piece without a newline that may still become a log line is held back
 * (`rest`: prepend it to the next chunk; flush it as `other` when the stream ends).
 */
export function splitMirroredLines(text: string): { log: string; other: string; rest: string } {
  let log = "";
  let other = "";
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    if (nl < 0) break;
    const line = text.slice(start, nl + 1);
    if (HUMAN_LINE.test(line)) log += line;
    else other += line;
    start = nl + 1;
  }
  const tail = text.slice(start);
  const maybe = tail.length < 200 && (tail.startsWith(HUMAN_PREFIX) || HUMAN_PREFIX.startsWith(tail));
  return maybe ? { log, other, rest: tail } : { log, other: other + tail, rest: "" };
}

const SECRET_KEY = /(api_?key|authorization|password|passwd|secret|token|credential|cookie)/i;

/** JSON-safe, bounded fields: errors become {name, message, stack}, secrets-looking keys are hidden. */
export function cleanFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    out[k] = SECRET_KEY.test(k) ? "[redacted]" : cleanValue(v, 0);
  }
  return out;
}

function cleanValue(v: unknown, depth: number): unknown {
  if (typeof v === "string") return cut(v, MAX_STRING);
  if (typeof v === "bigint") return v.toString();
  if (v === null || typeof v !== "object") return typeof v === "function" || typeof v === "symbol" ? String(v) : v;
  if (v instanceof Error) {
    const e: Record<string, unknown> = { name: v.name, message: cut(v.message, MAX_STRING) };
    const code = (v as { code?: unknown }).code;
    if (typeof code === "string") e.code = code;
    if (v.stack) e.stack = cut(v.stack, MAX_STACK);
    return e;
  }
  if (depth >= 4) return "[nested]";
  if (Array.isArray(v)) return v.slice(0, 50).map((x) => cleanValue(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v).slice(0, 50))
    out[k] = SECRET_KEY.test(k) ? "[redacted]" : cleanValue(x, depth + 1);
  return out;
}

function cut(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…[${s.length - max} more characters]`;
}

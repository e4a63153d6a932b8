/** One line of the timeline for an event of the run's log: who, what kind, a one-line text, a tone. */
import type { KnownLogEvent, LogLine } from "../../event-log.ts";
import { jsonObjectsIn } from "../../json-in-text.ts";

export type Tone = "" | "pass" | "fail" | "warn" | "dim" | "info";

export interface RowText {
  who: string;
  kind: string;
  text: string;
  tone: Tone;
}

const one = (s: string) => s.replace(/\s+/g, " ").trim();

/** A string field, or a list of strings joined; anything else is left out. */
const str = (v: unknown): string =>
  typeof v === "string" ? v : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string").join("; ") : "";
/** An enum word read as signals.ts reads it: any case, "-" or spaces for "_". */
const word = (v: unknown) =>
  str(v)
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, "_");
const withNote = (main: unknown, note: unknown) => one(`${str(main)}${str(note) ? ` — ${str(note)}` : ""}`);

/**
 * A role's message that is a signal (a verification or direction request, a delivery, a
 * directive, a verdict), read as the orchestrator reads it (the JSON may sit in prose or a
 * fence), as a readable row; undefined for a message that is prose.
 */
export function signalRow(text: string): Omit<RowText, "who"> | undefined {
  for (const o of jsonObjectsIn(text)) {
    const type = word(o.type);
    // A final round's request names the deliverable instead of a claim.
    if (type === "verification_request")
      return {
        kind: "asks to verify",
        text: withNote(o.claim_path ?? o.deliverable_path, o.notes ?? o.summary),
        tone: "info",
      };
    if (type === "direction_request") return { kind: "asks Director", text: one(str(o.prompt)), tone: "info" };
    if (type === "final_delivery")
      return { kind: "delivers", text: withNote(o.deliverable_path, o.summary), tone: "info" };
    if (typeof o.directive === "string")
      return {
        kind: "directive",
        text: one(`${o.directive}${str(o.rationale) ? ` (why: ${str(o.rationale)})` : ""}`),
        tone: "info",
      };
    const verdict = word(o.verdict);
    if (verdict === "pass" || verdict === "fail")
      return { kind: `verdict ${verdict.toUpperCase()}`, text: one(str(o.reasons)), tone: verdict };
  }
  return undefined;
}

export function describe(line: LogLine): RowText {
  const e = line as unknown as KnownLogEvent;
  switch (e.type) {
    case "run_started":
      return { who: "run", kind: e.resumed ? "resumed" : "started", text: e.pid ? `pid ${e.pid}` : "", tone: "info" };
    case "role":
      return roleRow(e);
    case "handoff":
      return { who: `${e.from} → ${e.to}`, kind: "handoff", text: one(e.summary), tone: "info" };
    case "direction_request":
      return { who: "solver → director", kind: "asks", text: one(e.prompt), tone: "info" };
    case "directive":
      return { who: "director", kind: "directive", text: one(e.directive), tone: "info" };
    case "verdict":
      return {
        who: e.role,
        kind: e.verdict === "pass" ? "PASS" : "FAIL",
        text: one(`${e.final ? "deliverable" : (e.claim_path ?? "")}: ${e.reasons.join("; ")}`),
        tone: e.verdict,
      };
    case "verification_summary":
      return {
        who: "verifiers",
        kind: e.overall === "pass" ? "PASSED" : "FAILED",
        text: `${e.passes}/${e.total} passed`,
        tone: e.overall,
      };
    case "checkpoint":
      return { who: "checkpoint", kind: e.name, text: `${e.trigger}: ${one(e.summary)}`, tone: "dim" };
    case "heartbeat":
      return {
        who: "heartbeat",
        kind: `turn ${e.turns}`,
        text: `${e.tokens_used} tokens; ${e.roles.map((r) => `${r.role}: ${r.doing}`).join(", ")}`,
        tone: "dim",
      };
    case "warning":
      return { who: "run", kind: "warning", text: one(e.message), tone: "warn" };
    case "structured_output_unsupported":
      return { who: e.role, kind: "prompt-only", text: one(e.reason), tone: "warn" };
    case "restored":
      return { who: "run", kind: "restored", text: `to ${e.checkpoint}`, tone: "warn" };
    case "operator":
      return { who: "operator", kind: e.action, text: one(e.text ?? ""), tone: "info" };
    case "run_finished":
      return {
        who: "run",
        kind: e.status,
        text: one(e.detail),
        tone: e.status === "complete" ? "pass" : e.status === "interrupted" ? "warn" : "fail",
      };
    default:
      return {
        who: "",
        kind: String(line.type),
        text: one(JSON.stringify(line)),
        tone: line.type === "unreadable" ? "warn" : "dim",
      };
  }
}

/** A role's own event: its turns, messages (signals read as such) and tool calls. */
function roleRow(e: Extract<KnownLogEvent, { type: "role" }>): RowText {
  const ev = e.event;
  switch (ev.kind) {
    case "turn_started":
      return { who: e.role, kind: "turn", text: "turn started", tone: "dim" };
    case "turn_completed":
      return { who: e.role, kind: "turn", text: "turn done", tone: "dim" };
    case "turn_aborted":
      return { who: e.role, kind: "turn", text: `turn aborted: ${one(ev.text)}`, tone: "warn" };
    case "message":
      return { who: e.role, ...(signalRow(ev.text) ?? { kind: "says", text: one(ev.text), tone: "" }) };
    case "tool_call":
      return { who: e.role, kind: ev.name, text: one(ev.text), tone: "" };
    case "tool_failed":
      return { who: e.role, kind: `${ev.name} failed`, text: one(ev.text), tone: "fail" };
    default:
      return {
        who: e.role,
        kind: ev.kind,
        text: one("text" in ev ? ev.text : ""),
        tone: ev.kind === "error" ? "fail" : "warn",
      };
  }
}

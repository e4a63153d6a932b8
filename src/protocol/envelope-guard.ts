/**
 * EnvelopeSchema's check without zod, for every frame a peer reads. Building the envelope's
 * discriminated union took about 3 ms of each relay process's first frame (the executor's, the
 * code-mode host's, each session's), and a frame's parse a few microseconds on the per-tool-call
 * path. envelope.ts stays the definition: its types, and the message that says what is wrong
 * with a frame this check refuses (the peer then asks the schema).
 * test/protocol/envelope-guard.test.ts checks that both accept the same JSON values and give
 * the same output.
 *
 * Its input is what JSON.parse returns (with restoreExactId's bigint ids): no inherited keys,
 * no undefined values.
 */

import type { Envelope, RequestId } from "../contracts/envelope.ts";
import { MAX_REQUEST_ID } from "../contracts/wire-id.ts";
import type { ErrorValue } from "../util/result-schema.ts";

type Fields = Record<string, unknown>;
type ResultValue = { ok: unknown } | { error: ErrorValue };

const isObject = (v: unknown): v is Fields => typeof v === "object" && v !== null && !Array.isArray(v);
const isMethod = (v: unknown): v is string => typeof v === "string" && v.length > 0;

export function isRequestId(v: unknown): v is RequestId {
  if (typeof v === "number") return Number.isSafeInteger(v) && v >= 0;
  return typeof v === "bigint" && v >= 0n && v <= MAX_REQUEST_ID;
}

/** `{ok}` or `{error: {code, message, data?}}`, nothing else beside them (the schema's strict objects). */
function resultValue(v: unknown): ResultValue | undefined {
  if (!isObject(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1) return undefined;
  if (keys[0] === "ok") return { ok: v.ok };
  const e = v.error;
  if (keys[0] !== "error" || !isObject(e) || typeof e.code !== "string" || typeof e.message !== "string")
    return undefined;
  // Unknown keys of the error value are dropped, as the schema's (non-strict) object does.
  return {
    error: "data" in e ? { code: e.code, message: e.message, data: e.data } : { code: e.code, message: e.message },
  };
}

/** The envelope `v` is, with only its known fields, or undefined when it is none. */
export function checkEnvelope(v: unknown): Envelope | undefined {
  if (!isObject(v)) return undefined;
  switch (v.type) {
    case "request":
      if (!isRequestId(v.id) || !isMethod(v.method)) return undefined;
      return "params" in v
        ? { type: "request", id: v.id, method: v.method, params: v.params }
        : { type: "request", id: v.id, method: v.method };
    case "notification":
      if (!isMethod(v.method)) return undefined;
      return "params" in v
        ? { type: "notification", method: v.method, params: v.params }
        : { type: "notification", method: v.method };
    case "response": {
      const result = isRequestId(v.id) ? resultValue(v.result) : undefined;
      return result && { type: "response", id: v.id as RequestId, result };
    }
    case "cancel":
      return isRequestId(v.id) ? { type: "cancel", id: v.id } : undefined;
    default:
      return undefined;
  }
}

/**
 * Response frames that always fit the frame limit: a caller must get an answer, so an answer
 * that is too large (or cannot be encoded at all) is replaced by an error that fits, and an
 * error message that is too large is cut, with a marker that says how much was dropped.
 */
import { Buffer } from "node:buffer";
import { ErrorCode, type RequestId, ResultValueSchema } from "../contracts/envelope.ts";
import { fastParse } from "../util/fast-parse.ts";
import { type ErrorValue, err, type Result } from "../util/result.ts";
import { encodeFrame, stringifyMessage } from "./frame.ts";

/** Error codes are short words; a longer one is cut so that the message keeps the room. */
const MAX_CODE_CHARS = 100;

export function truncationMarker(droppedBytes: number): string {
  return `…[truncated ${droppedBytes} bytes]`;
}

/**
 * The frame answering request `id` with `result`, or with an error that stands in for it:
 * `frame_too_large` for an ok value over the limit, `internal` for a result that is not a
 * Result value or cannot be encoded. Fails only when not even an empty error fits `limit`.
 */
export function responseFrame(id: RequestId, result: Result<unknown>, method: string, limit: number): Result<Buffer> {
  if (!fastParse(ResultValueSchema, result).success) {
    return errorFrame(
      id,
      {
        code: ErrorCode.Internal,
        message: `the handler of ${method} returned something that is not a Result value ({ok} or {error: {code, message}})`,
      },
      limit,
    );
  }
  // JSON drops an undefined member: `{ok: undefined}` would arrive as `{}`, which is no Result.
  if ("ok" in result && result.ok === undefined) result = { ok: null };
  const whole = encodeFrame({ type: "response", id, result }, limit);
  if ("ok" in whole) return whole;
  if ("error" in result) return errorFrame(id, result.error, limit); // cut to fit below
  if (whole.error.code !== ErrorCode.FrameTooLarge) {
    return errorFrame(
      id,
      { code: ErrorCode.Internal, message: `the response to ${method} could not be encoded: ${whole.error.message}` },
      limit,
    );
  }
  const size = (whole.error.data as { size?: number } | undefined)?.size ?? 0;
  const message = `the response to ${method} was too large: ${size} bytes > the ${limit}-byte frame limit; ask for less or raise the limit (--frame-limit)`;
  return errorFrame(id, { code: ErrorCode.FrameTooLarge, message }, limit);
}

/** An error response that fits `limit`: as it is, else without `data`, else with its message cut. */
export function errorFrame(id: RequestId, e: ErrorValue, limit: number): Result<Buffer> {
  const frame = (code: string, message: string, data?: unknown) =>
    encodeFrame({ type: "response", id, result: err(code, message, data) }, limit);
  if (e.data !== undefined) {
    const whole = frame(e.code, e.message, e.data);
    if ("ok" in whole) return whole;
  }
  const code = e.code.length > MAX_CODE_CHARS ? e.code.slice(0, MAX_CODE_CHARS) : e.code;
  const bare = frame(code, e.message);
  if ("ok" in bare) return bare;
  const empty = stringifyMessage({ type: "response", id, result: err(code, "") });
  if ("error" in empty) return empty;
  const total = Buffer.byteLength(e.message, "utf8");
  // The marker for all of the message is at least as long as the one finally used.
  const room = limit - Buffer.byteLength(empty.ok, "utf8") - Buffer.byteLength(truncationMarker(total), "utf8");
  if (room < 0)
    return err(ErrorCode.FrameTooLarge, `not even an empty error answer fits the ${limit}-byte frame limit`);
  const head = prefixWithinJsonBytes(e.message, room);
  return frame(code, head + truncationMarker(total - Buffer.byteLength(head, "utf8")));
}

/**
 * The longest prefix of `s` whose JSON string encoding (without the quotes) takes at most
 * `maxBytes` UTF-8 bytes; never splits a surrogate pair.
 */
export function prefixWithinJsonBytes(s: string, maxBytes: number): string {
  let used = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    let units = 1;
    let cost: number;
    if (c === 0x22 || c === 0x5c) cost = 2;
    else if (c < 0x20) cost = c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    else if (c < 0x80) cost = 1;
    else if (c < 0x800) cost = 2;
    else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(s.charCodeAt(i + 1))) {
      cost = 4;
      units = 2;
    } else if (c >= 0xd800 && c <= 0xdfff)
      cost = 6; // a lone surrogate is written as \uXXXX
    else cost = 3;
    if (used + cost > maxBytes) break;
    used += cost;
    i += units;
  }
  return s.slice(0, i);
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

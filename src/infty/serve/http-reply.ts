/** How the server answers: JSON, text, errors, with the headers every response carries (no CORS ever). */
import type { ServerResponse } from "node:http";
import type { ApiError } from "./api-schemas.ts";

/** On every response: no sniffing, no framing, no referrer, nothing cached. */
export const BASE_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "cross-origin-resource-policy": "same-origin",
};

/** The page's policy: scripts, styles and data from this server only, nothing inline. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** For files of the run: never run anything, whatever the browser makes of the bytes. */
export const FILE_CSP = "sandbox; default-src 'none'";

export function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...BASE_HEADERS,
    "content-type": type,
    "content-length": String(Buffer.byteLength(body)),
    ...extra,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value));
}

/** HTTP status for a Result error code. */
export function statusOf(code: string): number {
  if (code === "run_not_found" || code === "not_found") return 404;
  if (code === "escapes_run_store" || code === "forbidden") return 403;
  if (code === "bad_path" || code === "bad_request") return 400;
  if (code === "method_not_allowed") return 405;
  if (code === "unauthorized") return 401;
  if (code === "conflict") return 409;
  return 500;
}

export function sendError(res: ServerResponse, code: string, message: string, status = statusOf(code)): void {
  const body: ApiError = { error: { code, message } };
  sendJson(res, status, body);
}

/**
 * Who may talk to `relay infty serve`. Bound to a loopback address it answers only requests
 * whose Host is a loopback name (a DNS-rebinding page names its own host); any other address
 * needs a token. With a token every request must carry it: `Authorization: Bearer <token>`, or
 * the HttpOnly SameSite=Strict cookie that `/?token=<token>` sets once. Actions (POST) always
 * need the token and a custom header a cross-site form cannot send, and a matching Origin.
 */

import { Buffer } from "node:buffer";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const COOKIE = "relay_serve_token";
/** Actions must carry this header (a cross-site form or a simple request cannot). */
export const ACTION_HEADER = "x-relay-action";

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);
}

export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** The host name of a Host header (`[::1]:7788` → `[::1]`, `localhost:80` → `localhost`). */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.lastIndexOf(":");
  return colon === -1 ? h : h.slice(0, colon);
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function cookieValue(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface GuardOptions {
  /** The address the server is bound to. */
  host: string;
  /** undefined: no token (loopback only). */
  token: string | undefined;
}

export class Guard {
  constructor(private readonly o: GuardOptions) {}

  get token(): string | undefined {
    return this.o.token;
  }

  /** Why this request's Host is refused, or undefined when it is fine. */
  badHost(req: IncomingMessage): string | undefined {
    if (!isLoopbackAddress(this.o.host)) return undefined;
    const name = hostName(req.headers.host ?? "");
    return isLoopbackAddress(name)
      ? undefined
      : `this server answers only loopback host names (127.0.0.1, localhost, [::1]), not ${JSON.stringify(req.headers.host ?? "")}`;
  }

  /** Whether `given` is the token (false when the server has none). */
  isToken(given: string | undefined): boolean {
    return this.o.token !== undefined && given !== undefined && same(given, this.o.token);
  }

  /** The request carries the token (bearer header or cookie). */
  carriesToken(req: IncomingMessage): boolean {
    const auth = req.headers.authorization ?? "";
    const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    return this.isToken(bearer) || this.isToken(cookieValue(req, COOKIE));
  }

  /** Reads are open on loopback without a token; with one, they need it. */
  mayRead(req: IncomingMessage): boolean {
    return this.o.token === undefined || this.carriesToken(req);
  }

  /** Why an action request is refused, or undefined. */
  badAction(req: IncomingMessage): string | undefined {
    if (!this.carriesToken(req))
      return "actions need the server's token (the cookie set by the printed URL, or Authorization: Bearer)";
    if (req.headers[ACTION_HEADER] !== "1") return `actions need the header ${ACTION_HEADER}: 1`;
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host ?? ""}`)
      return `the request's Origin ${origin} is not this server`;
    return undefined;
  }

  /** The Set-Cookie header that keeps the token for the page. */
  cookie(): string {
    return `${COOKIE}=${this.o.token}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

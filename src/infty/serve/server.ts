/**
 * `relay infty serve`: one page and a small JSON API over the run stores in a runs root
 * ($RELAY_HOME/infty). It only reads the stores; with actions enabled it can stop, resume and
 * note a run through the same code as the CLI. node:http, so it runs under Bun, Node and Deno.
 */

import { createReadStream } from "node:fs";
import { readdir } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { err, ok, type Result } from "../../util/result.ts";
import { listCheckpoints } from "../checkpoints.ts";
import { parseLogLine } from "../event-log.ts";
import type { FleetView } from "../fleet/view-format.ts";
import type { ActionResult, CheckpointList, EventsPage, FileList } from "./api-schemas.ts";
import { streamEvents, streamStart } from "./event-stream.ts";
import { Guard, isLoopbackAddress, newToken } from "./guard.ts";
import { BASE_HEADERS, FILE_CSP, PAGE_CSP, send, sendError, sendJson, statusOf } from "./http-reply.ts";
import { PAGE_ASSETS } from "./page-assets.ts";
import { fileSegments, listRunFiles, resolveRunFile } from "./run-files.ts";
import { RunRegistry } from "./runs.ts";

export const DEFAULT_PORT = 7788;
const PAGE_LIMIT_DEFAULT = 200;
const PAGE_LIMIT_MAX = 2000;

/** What an action does to a run; the code behind it is actions.ts, which cli/infty/serve.ts loads on demand. */
export type ActionHandler = (runId: string, action: string, body: unknown) => Promise<Result<ActionResult>>;

export interface ServeOptions {
  /** The folder holding the runs ($RELAY_HOME/infty). */
  root: string;
  host: string;
  /** 0: any free port. */
  port: number;
  token?: string;
  /** Set: POST /api/runs/:id/actions/* is served (and a token is made if none is given). */
  actions?: ActionHandler;
  /** Set (--db): GET /api/fleet answers with the fleet's runs and workers. */
  fleet?: () => Promise<Result<FleetView>>;
}

export interface ServeHandle {
  url: string;
  port: number;
  /** The token requests need (undefined: none needed on this loopback server). */
  token: string | undefined;
  /** The URL that sets the token's cookie and opens the page. */
  openUrl: string;
  /** The same for every address the page can be opened at (several for --host 0.0.0.0). */
  openUrls: string[];
  close(): Promise<void>;
}

/** The URL for a host (an IPv6 address in brackets). */
function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
}

type Interfaces = ReturnType<typeof os.networkInterfaces>;

/**
 * The addresses people can open for a server bound to `host`: the host itself, or for an
 * unspecified one (0.0.0.0, ::), loopback and each address of this machine's interfaces (an
 * IPv6 bind takes IPv4 too). Link-local IPv6 addresses are left out (they need a zone to open).
 */
export function reachableHosts(host: string, interfaces: () => Interfaces = os.networkInterfaces): string[] {
  const bare = host.replace(/^\[|\]$/g, "");
  const v6 = bare === "::";
  if (bare !== "0.0.0.0" && !v6) return [host];
  const out = ["127.0.0.1", ...(v6 ? ["::1"] : [])];
  for (const list of Object.values(listed(interfaces))) {
    for (const a of list ?? []) {
      if (a.internal || (a.family === "IPv6" && (!v6 || a.address.toLowerCase().startsWith("fe80")))) continue;
      out.push(a.address);
    }
  }
  return [...new Set(out)];
}

/** The interfaces, or none where the system will not list them (some sandboxes): loopback still opens. */
function listed(interfaces: () => Interfaces): Interfaces {
  try {
    return interfaces();
  } catch {
    return {};
  }
}

export async function startServe(o: ServeOptions): Promise<Result<ServeHandle>> {
  const token = o.token ?? (!isLoopbackAddress(o.host) || o.actions ? newToken() : undefined);
  const guard = new Guard({ host: o.host, token });
  const runs = new RunRegistry(o.root, Boolean(o.actions));
  const server = createServer((req, res) => {
    void route(req, res, { guard, runs, actions: o.actions, fleet: o.fleet }).catch((e: Error) => {
      if (!res.headersSent) sendError(res, "internal", `the server failed on ${req.method} ${req.url}: ${e.message}`);
      else res.destroy();
    });
  });
  const listened = await listen(server, o.host, o.port);
  if ("error" in listened) return listened;
  const url = urlOf(o.host, listened.ok);
  const open = (u: string) => (token ? `${u}/?token=${token}` : `${u}/`);
  return ok({
    url,
    port: listened.ok,
    token,
    openUrl: open(url),
    openUrls: reachableHosts(o.host).map((h) => open(urlOf(h, listened.ok))),
    close: () =>
      new Promise<void>((resolve) => {
        runs.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

function listen(server: Server, host: string, port: number): Promise<Result<number>> {
  return new Promise((resolve) => {
    server.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EADDRINUSE")
        resolve(
          err(
            "port_in_use",
            `port ${port} on ${host} is in use (another relay infty serve?); pick another with --port N (--port 0 takes any free port)`,
          ),
        );
      else if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND")
        resolve(
          err(
            "bad_host",
            `cannot listen on ${host} (${e.code}): give an address of this machine with --host, e.g. 127.0.0.1`,
          ),
        );
      else if (e.code === "EACCES")
        resolve(
          err("port_denied", `not allowed to listen on port ${port} (${host}); use a port above 1023 with --port`),
        );
      else resolve(err("listen_failed", `cannot listen on ${host}:${port}: ${e.message}`));
    });
    server.listen(port, host, () => resolve(ok((server.address() as AddressInfo).port)));
  });
}

interface Ctx {
  guard: Guard;
  runs: RunRegistry;
  actions: ActionHandler | undefined;
  fleet: ServeOptions["fleet"];
}

async function route(req: IncomingMessage, res: ServerResponse, c: Ctx): Promise<void> {
  const raw = req.url ?? "/";
  const q = raw.indexOf("?");
  const pathname = q === -1 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q === -1 ? "" : raw.slice(q + 1));
  const badHost = c.guard.badHost(req);
  if (badHost) return sendError(res, "forbidden", badHost);
  if (pathname === "/" && query.has("token")) return tokenLogin(req, res, c, query.get("token")!);
  const api = /^\/api\/runs\/([^/]+)\/actions\/([a-z]+)$/.exec(pathname);
  if (api && c.actions) return action(req, res, c, decodeURIComponent(api[1]!), api[2]!);
  if (req.method !== "GET" && req.method !== "HEAD")
    return sendError(
      res,
      "method_not_allowed",
      `${req.method} is not served here; the API is read-only (GET)${c.actions ? " except POST /api/runs/<id>/actions/<stop|resume|note>" : ""}`,
    );
  if (!c.guard.mayRead(req)) {
    if (pathname.startsWith("/api/"))
      return sendError(
        res,
        "unauthorized",
        "this server needs its token: send Authorization: Bearer <token>, or open the URL with ?token= that relay infty serve printed",
      );
    return send(
      res,
      401,
      "text/plain; charset=utf-8",
      "This relay infty serve needs its token: open the URL with ?token=… that it printed when it started.\n",
    );
  }
  if (pathname === "/favicon.ico") return send(res, 204, "text/plain; charset=utf-8", "");
  const asset = PAGE_ASSETS[pathname === "/" || pathname === "/index.html" ? "/" : pathname];
  if (asset)
    return send(
      res,
      200,
      asset.type,
      asset.body,
      asset.type.startsWith("text/html") ? { "content-security-policy": PAGE_CSP } : {},
    );
  if (pathname === "/api/runs") return sendJson(res, 200, await c.runs.list());
  if (pathname === "/api/fleet") return fleet(res, c);
  const m = /^\/api\/runs\/([^/]+)(\/[^/]+)?(\/.*)?$/.exec(pathname);
  if (!m) return sendError(res, "not_found", `nothing at ${pathname}; the page is at / and the API under /api/runs`);
  const id = safeDecode(m[1]!);
  const dir = c.runs.dirOf(id);
  if ("error" in dir) return sendError(res, dir.error.code, dir.error.message);
  const sub = m[2] ?? "";
  if (sub === "" && !m[3]) {
    const d = await c.runs.detail(id);
    return "error" in d ? sendError(res, d.error.code, d.error.message) : sendJson(res, 200, d.ok);
  }
  if (sub === "/events" && !m[3]) return events(req, res, c, id, dir.ok, query);
  if (sub === "/checkpoints" && !m[3]) {
    const list = await listCheckpoints(dir.ok);
    if ("error" in list) return sendError(res, "internal", list.error.message);
    const body: CheckpointList = { checkpoints: list.ok };
    return sendJson(res, 200, body);
  }
  if (sub === "/files") return files(res, dir.ok, (m[3] ?? "").replace(/^\//, ""));
  return sendError(res, "not_found", `nothing at ${pathname}; a run has /events, /files, /checkpoints`);
}

async function fleet(res: ServerResponse, c: Ctx): Promise<void> {
  if (!c.fleet)
    return sendError(res, "not_found", "this server shows no fleet: start it with relay infty serve --db postgres://…");
  const view = await c.fleet();
  if ("error" in view) return sendError(res, "internal", view.error.message);
  return sendJson(res, 200, view.ok);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `/?token=…`: the right token sets the cookie and sends the browser to `/` without it in the URL. */
function tokenLogin(_req: IncomingMessage, res: ServerResponse, c: Ctx, given: string): void {
  if (!c.guard.isToken(given))
    return send(
      res,
      401,
      "text/plain; charset=utf-8",
      "Wrong token: open the URL that relay infty serve printed when it started.\n",
    );
  res.writeHead(303, { ...BASE_HEADERS, location: "/", "set-cookie": c.guard.cookie(), "content-length": "0" });
  res.end();
}

async function events(
  req: IncomingMessage,
  res: ServerResponse,
  c: Ctx,
  id: string,
  dir: string,
  query: URLSearchParams,
): Promise<void> {
  const w = c.runs.watch(id, dir);
  if ((req.headers.accept ?? "").includes("text/event-stream"))
    return streamEvents(req, res, w, streamStart(req, query.get("from")));
  const from = Number(query.get("from") ?? 0);
  const limit = Number(query.get("limit") ?? PAGE_LIMIT_DEFAULT);
  if (!Number.isInteger(from) || from < 0 || !Number.isInteger(limit) || limit < 0)
    return sendError(res, "bad_request", "from and limit are whole numbers ≥ 0, e.g. ?from=1000&limit=200");
  const total = await w.index.refresh();
  const lines = await w.index.read(from, Math.min(limit, PAGE_LIMIT_MAX));
  const body: EventsPage = {
    run_id: id,
    from,
    total,
    events: lines.map((line, i) => ({ n: from + i, event: parseLogLine(line) })),
  };
  sendJson(res, 200, body);
}

async function files(res: ServerResponse, dir: string, rest: string): Promise<void> {
  if (rest === "") {
    const list: FileList = await listRunFiles(dir);
    return sendJson(res, 200, list);
  }
  const segs = fileSegments(rest);
  if ("error" in segs) return sendError(res, segs.error.code, segs.error.message);
  const r = await resolveRunFile(dir, segs.ok);
  if ("error" in r) return sendError(res, r.error.code, r.error.message, statusOf(r.error.code));
  if (r.ok.kind === "dir") {
    const names = await readdir(r.ok.real, { withFileTypes: true });
    const list: FileList = {
      files: names.map((e) => ({
        path: `${segs.ok.join("/")}/${e.name}`,
        size: 0,
        kind: e.isDirectory() ? ("dir" as const) : ("file" as const),
      })),
      truncated: false,
    };
    return sendJson(res, 200, list);
  }
  res.writeHead(200, {
    ...BASE_HEADERS,
    "content-type": r.ok.type,
    "content-length": String(r.ok.size),
    "content-security-policy": FILE_CSP,
    "content-disposition": "inline",
  });
  createReadStream(r.ok.real)
    .on("error", () => res.destroy())
    .pipe(res);
}

async function action(req: IncomingMessage, res: ServerResponse, c: Ctx, id: string, name: string): Promise<void> {
  if (req.method !== "POST")
    return sendError(res, "method_not_allowed", `actions are POST requests (POST /api/runs/${id}/actions/${name})`);
  const bad = c.guard.badAction(req);
  if (bad) return sendError(res, "forbidden", bad);
  // With a fleet, a run may be only in the fleet DB (queued, or on a root this host lacks): the handler looks.
  const known = c.fleet ? c.runs.validId(id) : c.runs.dirOf(id);
  if ("error" in known) return sendError(res, known.error.code, known.error.message);
  let body: unknown = {};
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 64 * 1024) return sendError(res, "bad_request", "an action's body is at most 64 KiB");
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      return sendError(res, "bad_request", 'an action\'s body is JSON, e.g. {"text": "…"}');
    }
  }
  const r = await c.actions!(id, name, body);
  return "error" in r ? sendError(res, r.error.code, r.error.message) : sendJson(res, 200, r.ok);
}

/**
 * A run's events as Server-Sent Events: every line of events.jsonl from a start index on, then
 * each line as it is appended. The line's index is the SSE `id`, so a page that reconnects
 * (EventSource sends `Last-Event-ID`) or asks `?from=N` misses nothing and gets nothing twice.
 * `event: run` says run.json changed (the page fetches the run again).
 */
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parseLogLine } from "../event-log.ts";
import type { IndexedEvent } from "./api-schemas.ts";
import { SSE_RUN_EVENT } from "./api-schemas.ts";
import { BASE_HEADERS } from "./http-reply.ts";
import type { RunWatch } from "./run-watch.ts";

const BATCH = 500;
/** A comment this often keeps proxies and ssh tunnels from closing an idle stream. */
export const SSE_PING_MS = 15_000;

/** Where a stream starts: after the Last-Event-ID the browser sends, else at `?from=N`, else 0. */
export function streamStart(req: IncomingMessage, from: string | null): number {
  const last = req.headers["last-event-id"];
  if (typeof last === "string" && /^\d+$/.test(last.trim())) return Number(last.trim()) + 1;
  return from !== null && /^\d+$/.test(from) ? Number(from) : 0;
}

export function sseFrame(e: IndexedEvent): string {
  return `id: ${e.n}\ndata: ${JSON.stringify(e)}\n\n`;
}

export function streamEvents(req: IncomingMessage, res: ServerResponse, watch: RunWatch, start: number): void {
  res.writeHead(200, {
    ...BASE_HEADERS,
    "content-type": "text/event-stream; charset=utf-8",
    "x-accel-buffering": "no",
  });
  res.write("retry: 2000\n\n");
  let sent = start;
  let pumping = false;
  let again = false;
  let closed = false;
  const write = async (chunk: string) => {
    if (!res.write(chunk) && !closed) await once(res, "drain");
  };
  const pump = async () => {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        while (!closed && sent < watch.index.count) {
          const lines = await watch.index.read(sent, BATCH);
          if (lines.length === 0) break;
          await write(lines.map((line, i) => sseFrame({ n: sent + i, event: parseLogLine(line) })).join(""));
          sent += lines.length;
        }
      } while (again && !closed);
    } catch {
      res.destroy();
    } finally {
      pumping = false;
    }
  };
  const stop = watch.listen({
    grew: () => void pump(),
    changed: () => void write(`event: ${SSE_RUN_EVENT}\ndata: {}\n\n`).catch(() => {}),
  });
  const ping = setInterval(() => res.write(": ping\n\n"), SSE_PING_MS);
  ping.unref?.();
  const end = () => {
    if (closed) return;
    closed = true;
    stop();
    clearInterval(ping);
    res.emit("drain");
  };
  req.on("close", end);
  res.on("close", end);
  void watch.index.refresh().then(pump, () => res.destroy());
}

/**
 * Run stores for the `relay infty serve` tests: a finished run made by the scripted first
 * timeline (fail, fix, pass, deliver), a running one made by hand (its heartbeat fresh and its
 * run_started naming this process, so it counts as live) that the tests append events to, and
 * hostile content: an artifact and an event text full of HTML, a symlink out of the store.
 */

import { spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { type IncomingHttpHeaders, request } from "node:http";
import os from "node:os";
import path from "node:path";
import { RunStore } from "../../src/infty/run-store.ts";
import { runFirstTimeline, setup } from "./infty-timeline.ts";
import { Inbox } from "./wait.ts";

export const FINISHED = "run-finished";
export const RUNNING = "run-running";
/** A run whose run.json says running, but whose driver (its lease's holder) is a dead process. */
export const STALE = "run-stale";
export const HOSTILE = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><a href="javascript:window.__pwned=3">x</a>`;

export async function serveRuns() {
  const t = await setup();
  const first = await runFirstTimeline(t, FINISHED);
  if (first.status !== "complete") throw new Error(`the scripted run ended ${first.status}`);
  const created = await RunStore.create(
    t.home,
    {
      run_id: RUNNING,
      objective: `Keep going ${HOSTILE}`,
      verifiers: 2,
      consensus: "all",
      max_turns: 50,
      max_wall_ms: 3_600_000,
      max_tokens: 100_000,
    },
    { type: "solver_message", message: "start" },
  );
  if ("error" in created) throw new Error(created.error.message);
  const store = created.ok;
  await store.log({ type: "run_started", resumed: false, pid: process.pid });
  await store.log({ type: "role", role: "solver", event: { kind: "turn_started" } });
  await store.log({ type: "role", role: "solver", event: { kind: "message", text: `Working on it ${HOSTILE}` } });
  await store.log({
    type: "heartbeat",
    turns: 1,
    tokens_used: 1200,
    roles: [{ role: "solver", turn: 1, doing: "waiting for model", since: new Date().toISOString(), tokens: 1200 }],
  });
  await store.update({ turns: 1, tokens_used: 1200, heartbeat_at: new Date().toISOString() });
  const stale = await RunStore.create(
    t.home,
    { run_id: STALE, objective: "Left behind", verifiers: 1, consensus: "all", max_turns: 50, max_wall_ms: 3_600_000 },
    { type: "solver_message", message: "start" },
  );
  if ("error" in stale) throw new Error(stale.error.message);
  const deadPid = spawnSync(process.execPath, ["-e", "0"]).pid!;
  const now = new Date().toISOString();
  writeFileSync(
    path.join(stale.ok.dir, "lease.json"),
    JSON.stringify({
      version: 1,
      epoch: 1,
      holder: { pid: deadPid, start_time: null, host: os.hostname() },
      acquired_at: now,
      heartbeat_at: now,
      released_at: null,
    }),
  );
  const runDir = path.join(t.home, "infty", RUNNING);
  writeFileSync(path.join(runDir, "artifacts", "evil.html"), `<!doctype html><html><body>${HOSTILE}</body></html>\n`);
  mkdirSync(path.join(runDir, "deliverable"), { recursive: true });
  symlinkSync("/etc/passwd", path.join(runDir, "artifacts", "passwd"));
  return {
    ...t,
    root: path.join(t.home, "infty"),
    finishedDir: first.runDir,
    runningDir: runDir,
    staleDriverPid: deadPid,
    store,
    /** Appends raw lines to the running run's events.jsonl, as the orchestrator would. */
    append(...events: object[]) {
      appendFileSync(
        path.join(runDir, "events.jsonl"),
        events.map((e) => JSON.stringify({ at: new Date().toISOString(), ...e }) + "\n").join(""),
      );
    },
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A GET (or other) request with the path sent as written (no URL normalisation of `..`). */
export function raw(
  base: string,
  pathAndQuery: string,
  o: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: pathAndQuery, method: o.method ?? "GET", headers: o.headers },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(o.body);
  });
}

export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/** An SSE stream: each message pushed to `messages` as it arrives; `close()` ends it. */
export function sse(
  base: string,
  pathAndQuery: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; messages: Inbox<SseMessage>; close(): void }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: pathAndQuery, headers: { accept: "text/event-stream", ...headers } },
      (res) => {
        const messages = new Inbox<SseMessage>();
        let buf = "";
        res.setEncoding("utf8").on("data", (d: string) => {
          buf += d;
          for (let end = buf.indexOf("\n\n"); end !== -1; end = buf.indexOf("\n\n")) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const m: SseMessage = { data: "" };
            let hasData = false;
            for (const line of block.split("\n")) {
              const colon = line.indexOf(":");
              if (colon === 0) continue;
              const field = colon === -1 ? line : line.slice(0, colon);
              const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
              if (field === "data") {
                m.data = hasData ? `${m.data}\n${value}` : value;
                hasData = true;
              } else if (field === "id") m.id = value;
              else if (field === "event") m.event = value;
            }
            if (hasData) messages.push(m);
          }
        });
        resolve({ status: res.statusCode ?? 0, messages, close: () => req.destroy() });
      },
    );
    req.on("error", (e) =>
      e.message.includes("socket hang up") || (e as NodeJS.ErrnoException).code === "ECONNRESET"
        ? undefined
        : reject(e),
    );
    req.end();
  });
}

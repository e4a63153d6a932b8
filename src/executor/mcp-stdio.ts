/**
 * MCP stdio servers on the executor host. A server is a process whose stdin and stdout carry
 * newline-delimited JSON-RPC; this host starts it, writes what the orchestrator sends, and
 * forwards every stdout line as a notification, then the exit with the stderr tail. Each server
 * carries this executor's marker variable, so the executor's death guard ends it (and whatever
 * it started) even when the executor is SIGKILLed.
 */

import { Buffer } from "node:buffer";
import { type ChildProcess, spawn } from "node:child_process";
import {
  McpBadLineNotification,
  McpExitedNotification,
  McpManifestMethod,
  McpMessageNotification,
  McpSendMethod,
  McpStartMethod,
  McpStopMethod,
} from "../contracts/mcp-bridge.ts";
import type { MethodErrors } from "../contracts/method.ts";
import { killTree, killTreeNow, killTreesNow, MARKER_VAR } from "../process/kill-tree.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { readMcpManifest } from "./mcp-manifest.ts";

const log = Log.create("mcp-stdio");

/** A stdout line longer than this is dropped (and reported): it must fit a frame once re-encoded. */
export const MAX_MCP_LINE_BYTES = 4 * 1024 * 1024;
const STDERR_TAIL_CHARS = 4000;
const MAX_SERVERS = 32;
/** The host's variables a server gets besides its own `env` (as Codex and the MCP SDK pass them). */
const BASE_ENV_VARS = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"];

/** How much of a dropped line's start and end is kept: enough to find its JSON-RPC id. */
const EDGE_BYTES = 256;

/** Splits a byte stream into lines, dropping (and reporting, with its edges) any over `max` bytes without holding it. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private dropping = false;
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);

  constructor(
    private readonly max: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (bytes: number, edges: string) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.add(chunk.subarray(start, nl));
      this.finishLine();
      start = nl + 1;
    }
    if (start < chunk.length) this.add(chunk.subarray(start));
  }

  /** The rest after the stream ended, as a last line. */
  end(): void {
    if (this.size > 0 || this.dropping) this.finishLine();
  }

  private add(piece: Buffer): void {
    this.size += piece.length;
    if (this.dropping) {
      this.tail = Buffer.concat([this.tail, piece.subarray(-EDGE_BYTES)]).subarray(-EDGE_BYTES);
      return;
    }
    if (this.size > this.max) {
      const held = Buffer.concat([...this.parts, piece]);
      this.head = held.subarray(0, EDGE_BYTES);
      this.tail = held.subarray(-EDGE_BYTES);
      this.dropping = true;
      this.parts = [];
      return;
    }
    this.parts.push(piece);
  }

  private finishLine(): void {
    if (this.dropping) this.onOversized(this.size, `${this.head.toString("utf8")}…${this.tail.toString("utf8")}`);
    else {
      const line = Buffer.concat(this.parts).toString("utf8").replace(/\r$/, "");
      if (line.trim() !== "") this.onLine(line);
    }
    this.parts = [];
    this.size = 0;
    this.dropping = false;
  }
}

interface Running {
  id: string;
  child: ChildProcess;
  marker: string;
  stderrTail: string;
  exited: boolean;
}

export class McpStdioHost {
  private readonly servers = new Map<string, Running>();
  private counter = 0;

  constructor(
    private readonly peer: RpcPeer,
    /** The marker value of a process about to start (ProcessManager.marker). */
    private readonly marker: (suffix: string) => string,
  ) {}

  /** Serves the mcp/* methods; `owner` kills this host's servers whenever it kills its own processes. */
  register(owner: { alsoOnKillAll(fn: () => void): void }): void {
    owner.alsoOnKillAll(() => this.killAllNow());
    this.peer.handle(McpManifestMethod, async (req) => ok(await readMcpManifest(req.root)));
    this.peer.handle(McpStartMethod, (req) => this.start(req));
    this.peer.handle(McpSendMethod, (req) => this.send(req.server_id, req.message));
    this.peer.handle(McpStopMethod, async (req) => ok({ was_running: await this.stop(req.server_id) }));
    void this.peer.closed.then(() => this.killAllNow());
  }

  private start(req: {
    server_id: string;
    command: string;
    args: string[];
    env: Record<string, string>;
    cwd: string;
  }): Result<{ pid: number }, MethodErrors<typeof McpStartMethod>> {
    if (this.servers.has(req.server_id))
      return err("invalid_params", `MCP server id ${req.server_id} is already running; stop it first`);
    if (this.servers.size >= MAX_SERVERS)
      return err("too_many_servers", `this executor already runs ${MAX_SERVERS} MCP servers; stop one first`);
    const marker = this.marker(`mcp${++this.counter}`);
    const env: Record<string, string> = {};
    for (const k of BASE_ENV_VARS) if (process.env[k] !== undefined) env[k] = process.env[k]!;
    Object.assign(env, req.env, { [MARKER_VAR]: marker });
    let child: ChildProcess;
    try {
      child = spawn(req.command, req.args, { cwd: req.cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    } catch (e) {
      return err(
        "spawn_failed",
        `could not start ${JSON.stringify(req.command)} in ${req.cwd}: ${(e as Error).message}`,
      );
    }
    if (child.pid === undefined) {
      // The error event follows; report it now, as the start's answer.
      child.on("error", () => {});
      return err(
        "spawn_failed",
        `could not start ${JSON.stringify(req.command)} in ${req.cwd}: no such file, or not executable (check command and cwd on the executor host)`,
      );
    }
    const running: Running = { id: req.server_id, child, marker, stderrTail: "", exited: false };
    this.servers.set(req.server_id, running);
    this.watch(running);
    log.info("mcp server started", { server_id: req.server_id, pid: child.pid });
    return ok({ pid: child.pid });
  }

  private watch(s: Running): void {
    const { child } = s;
    const splitter = new LineSplitter(
      MAX_MCP_LINE_BYTES,
      (line) => this.forward(s.id, line),
      (bytes, edges) =>
        this.badLine(
          s.id,
          `a ${bytes}-byte message is over the executor's ${MAX_MCP_LINE_BYTES}-byte limit for one MCP message; dropped`,
          edges,
        ),
    );
    child.stdout!.on("data", (chunk: Buffer) => splitter.push(chunk));
    child.stdout!.on("end", () => splitter.end());
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => (s.stderrTail = (s.stderrTail + text).slice(-STDERR_TAIL_CHARS)));
    child.stdin!.on("error", () => {});
    child.on("error", (e) => (s.stderrTail += `\n${e.message}`));
    // `close` comes after stdout ended: every message is forwarded before the exit.
    child.once("close", (code, signal) => {
      s.exited = true;
      this.servers.delete(s.id);
      log.info("mcp server exited", { server_id: s.id, code, signal });
      this.peer.notify(McpExitedNotification, { server_id: s.id, code, signal, stderr_tail: s.stderrTail });
      // Whatever it left behind (a grandchild holding a pipe) goes too.
      killTreeNow(child.pid!, s.marker);
    });
  }

  private forward(id: string, line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch (e) {
      return this.badLine(id, `stdout line is not JSON (${(e as Error).message}): ${line.slice(0, 200)}`);
    }
    const sent = this.peer.notify(McpMessageNotification, { server_id: id, message });
    // Too large once encoded (escapes grow it): its edges still let the orchestrator fail that call.
    if ("error" in sent && !this.peer.isClosed)
      this.badLine(
        id,
        `a stdout message could not be forwarded: ${sent.error.message}`,
        `${line.slice(0, EDGE_BYTES)}…${line.slice(-EDGE_BYTES)}`,
      );
  }

  private badLine(id: string, reason: string, edges?: string): void {
    log.warn("mcp server stdout", { server_id: id, reason });
    this.peer.notify(McpBadLineNotification, { server_id: id, reason, ...(edges !== undefined ? { edges } : {}) });
  }

  private send(
    id: string,
    message: unknown,
  ): Promise<Result<Record<string, never>, "not_running">> | Result<Record<string, never>, "not_running"> {
    const s = this.servers.get(id);
    if (!s || s.exited) return err("not_running", `MCP server ${id} is not running on this executor`);
    const stdin = s.child.stdin!;
    const line = `${JSON.stringify(message)}\n`;
    if (stdin.write(line)) return ok({});
    return new Promise((resolve) => {
      const done = () => resolve(ok({}));
      stdin.once("drain", done);
      s.child.once("close", done);
    });
  }

  /** Ends one server and its tree: stdin closed, then SIGTERM and SIGKILL. */
  private async stop(id: string): Promise<boolean> {
    const s = this.servers.get(id);
    if (!s || s.exited) return false;
    s.child.stdin!.end();
    await killTree(s.child.pid!, s.marker);
    return true;
  }

  /** Synchronously kills every server (the executor is going away). */
  killAllNow(): void {
    killTreesNow(
      [...this.servers.values()].filter((s) => !s.exited).map((s) => ({ leader: s.child.pid!, marker: s.marker })),
    );
    this.servers.clear();
  }
}

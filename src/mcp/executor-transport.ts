/**
 * The SDK's Transport over an executor peer: the MCP server runs on the executor host (started
 * by `mcp/start`), its stdin is written with `mcp/send`, and its stdout messages and exit come
 * back as notifications. The SDK Client talks to it as to a local process, without a network path.
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import {
  McpBadLineNotification,
  McpExitedNotification,
  McpManifestMethod,
  McpMessageNotification,
  McpSendMethod,
  McpStartMethod,
  type McpStdioServer,
  McpStopMethod,
} from "../contracts/mcp-bridge.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { randomUUID } from "../util/random.ts";
import { err, ok, type Result } from "../util/result.ts";
import { describeExit, type McpLink } from "./link.ts";

/** Routes one peer's MCP notifications to the transports by server id (a peer has one handler per method). */
class PeerRoutes {
  private static readonly byPeer = new WeakMap<RpcPeer, PeerRoutes>();
  private readonly transports = new Map<string, ExecutorMcpTransport>();

  static of(peer: RpcPeer): PeerRoutes {
    let routes = PeerRoutes.byPeer.get(peer);
    if (!routes) {
      routes = new PeerRoutes(peer);
      PeerRoutes.byPeer.set(peer, routes);
    }
    return routes;
  }

  private constructor(peer: RpcPeer) {
    peer.onNotification(McpMessageNotification, (p) => this.transports.get(p.server_id)?.receive(p.message));
    peer.onNotification(McpBadLineNotification, (p) => this.transports.get(p.server_id)?.badLine(p.reason, p.edges));
    peer.onNotification(McpExitedNotification, (p) =>
      this.transports.get(p.server_id)?.ended(describeExit(p.code, p.signal, p.stderr_tail)),
    );
    void peer.closed.then((reason) => {
      for (const t of [...this.transports.values()]) t.ended(`: the executor connection closed (${reason})`);
    });
  }

  add(id: string, t: ExecutorMcpTransport): void {
    this.transports.set(id, t);
  }

  remove(id: string): void {
    this.transports.delete(id);
  }
}

/** The id of a JSON-RPC response from the edges of its text (`"id":7` closes the SDK's answers, or opens them). */
function answeredId(edges: string): number | string | undefined {
  if (!/"(result|error)"\s*:/.test(edges)) return undefined;
  const m = [...edges.matchAll(/"id"\s*:\s*(\d+|"(?:[^"\\]|\\.)*")\s*[,}]/g)].at(-1);
  if (!m) return undefined;
  return m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : Number(m[1]);
}

const isMessage = (m: unknown): m is JSONRPCMessage =>
  m !== null && typeof m === "object" && !Array.isArray(m) && (m as { jsonrpc?: unknown }).jsonrpc === "2.0";

export class ExecutorMcpTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Chosen here, so a message that comes before `mcp/start` is answered still finds this transport. */
  readonly serverId = `mcp-${randomUUID()}`;
  private end: string | undefined;
  private endedSignal!: () => void;
  private readonly endedPromise = new Promise<void>((r) => (this.endedSignal = r));
  private routes: PeerRoutes;

  constructor(
    private readonly peer: RpcPeer,
    private readonly server: McpStdioServer,
  ) {
    this.routes = PeerRoutes.of(peer);
  }

  async start(): Promise<void> {
    this.routes.add(this.serverId, this);
    const r = await this.peer.call(
      McpStartMethod,
      {
        server_id: this.serverId,
        command: this.server.command,
        args: this.server.args,
        env: this.server.env,
        cwd: this.server.cwd,
      },
      { timeoutMs: 30_000 },
    );
    if ("error" in r) {
      this.routes.remove(this.serverId);
      throw new Error(r.error.message);
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.end !== undefined) throw new Error(`the server has exited${this.end}`);
    const r = await this.peer.call(McpSendMethod, { server_id: this.serverId, message });
    if ("error" in r) throw new Error(r.error.message);
  }

  async close(): Promise<void> {
    if (this.end === undefined) {
      const r = await this.peer.call(McpStopMethod, { server_id: this.serverId }, { timeoutMs: 30_000 });
      if ("error" in r || !r.ok.was_running) this.ended("");
      await this.endedPromise;
    }
  }

  receive(message: unknown): void {
    if (this.end !== undefined) return;
    if (isMessage(message)) this.onmessage?.(message);
    else
      this.onerror?.(
        new Error(`the server wrote a message that is not JSON-RPC 2.0: ${JSON.stringify(message)?.slice(0, 200)}`),
      );
  }

  /**
   * A line the executor could not forward. When it was an answer (its id is in its edges), that
   * request fails now with the reason instead of waiting for its time limit.
   */
  badLine(reason: string, edges?: string): void {
    this.onerror?.(new Error(reason));
    const id = edges === undefined ? undefined : answeredId(edges);
    if (id !== undefined)
      this.onmessage?.({
        jsonrpc: "2.0",
        id,
        error: { code: -32603, message: `the server's answer was dropped: ${reason}` },
      });
  }

  ended(how: string): void {
    if (this.end !== undefined) return;
    this.end = how;
    this.routes.remove(this.serverId);
    this.endedSignal();
    this.onclose?.();
  }

  describeEnd(): string {
    return this.end ?? "";
  }
}

/** A link factory for one manifest server on the executor behind `peer`. */
export function executorLink(peer: RpcPeer, server: McpStdioServer): () => Promise<Result<McpLink>> {
  return async () => {
    if (peer.isClosed) return err("executor_closed", "the executor connection is closed");
    const t = new ExecutorMcpTransport(peer, server);
    return ok({ transport: t, describeEnd: () => t.describeEnd() });
  };
}

/** The servers of a capability root's `.mcp.json`, read on the executor host. */
export async function readExecutorManifest(
  peer: RpcPeer,
  rootPath: string,
): Promise<Result<{ found: boolean; path: string; servers: McpStdioServer[]; warnings: string[] }>> {
  const r = await peer.call(McpManifestMethod, { root: rootPath }, { timeoutMs: 30_000 });
  if ("error" in r) return err(r.error.code, r.error.message);
  return ok(r.ok);
}

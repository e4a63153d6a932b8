/**
 * Links for the servers of config.toml: a stdio server runs on this host (the SDK's
 * StdioClientTransport), an HTTP server is reached with the SDK's StreamableHTTPClientTransport.
 * The SDK is imported here, on first use only: a session without MCP servers never loads it.
 */
import type { ChildProcess } from "node:child_process";
import type { Stream } from "node:stream";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpLaunchConfig } from "../config/mcp-servers.ts";
import { killTree, MARKER_VAR } from "../process/kill-tree.ts";
import { randomUUID } from "../util/random.ts";
import { err, ok, type Result } from "../util/result.ts";
import { describeExit, type McpLink, STDERR_TAIL_CHARS } from "./link.ts";

/** Relay's variables a stdio server gets besides the SDK's defaults (HOME, PATH, ...): `env_vars`, then `env`. */
export function stdioEnv(
  launch: { env: Record<string, string>; envVars: string[] },
  from: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of launch.envVars) if (from[name] !== undefined) env[name] = from[name]!;
  return { ...env, ...launch.env };
}

/**
 * The SDK's stdio transport, watched: its exit status and stderr tail make the message when the
 * server dies (the SDK reports only that the connection closed). The server carries a marker
 * variable of its own, so closing ends what it started too (the SDK ends only its own child),
 * however it was re-parented: a daemon started with setsid, a grandchild left by `npx`.
 */
class WatchedStdio implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  stderrTail = "";
  exit: { code: number | null; signal: string | null } | undefined;
  private child: ChildProcess | undefined;
  /** Set once relay closes it: an exit after that is relay's doing, not the server's. */
  private closing = false;

  constructor(
    private readonly inner: Transport & { readonly stderr: Stream | null; readonly pid: number | null },
    private readonly marker: string,
  ) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (e) => this.onerror?.(e);
    inner.onmessage = (m) => this.onmessage?.(m);
    inner.stderr?.on(
      "data",
      (d: Buffer | string) => (this.stderrTail = (this.stderrTail + d.toString()).slice(-STDERR_TAIL_CHARS)),
    );
  }

  async start(): Promise<void> {
    await this.inner.start();
    // The SDK keeps the child private; its exit status is all we read from it (pinned SDK version).
    this.child = (this.inner as unknown as { _process?: ChildProcess })._process;
    this.child?.once("exit", (code, signal) => {
      if (!this.closing) this.exit = { code, signal };
    });
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  async close(): Promise<void> {
    this.closing = true;
    const pid = this.child?.pid;
    if (pid !== undefined) await killTree(pid, this.marker, 100);
    await this.inner.close();
  }
}

async function stdioLink(launch: Extract<McpLaunchConfig, { type: "stdio" }>): Promise<Result<McpLink>> {
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const marker = `mcp-${randomUUID()}`;
  const env = { ...stdioEnv(launch), [MARKER_VAR]: marker };
  const t = new WatchedStdio(
    new StdioClientTransport({
      command: launch.command,
      args: launch.args,
      env,
      stderr: "pipe",
      ...(launch.cwd ? { cwd: launch.cwd } : {}),
    }),
    marker,
  );
  return ok({
    transport: t,
    describeEnd: () => describeExit(t.exit?.code, t.exit?.signal, t.stderrTail),
  });
}

/** The HTTP headers of a server: http_headers, env_http_headers (set variables only), the bearer token. */
export function httpHeaders(
  server: string,
  launch: Extract<McpLaunchConfig, { type: "http" }>,
  from: NodeJS.ProcessEnv = process.env,
): Result<Record<string, string>> {
  const headers: Record<string, string> = { ...launch.headers };
  for (const [header, name] of Object.entries(launch.envHeaders))
    if (from[name] !== undefined) headers[header] = from[name]!;
  if (launch.bearerTokenEnvVar) {
    const token = from[launch.bearerTokenEnvVar];
    if (!token)
      return err(
        "mcp_config",
        `bearer_token_env_var of [mcp_servers.${server}] names ${launch.bearerTokenEnvVar}, which is not set; export ${launch.bearerTokenEnvVar}=<token> before starting relay`,
      );
    headers.Authorization = `Bearer ${token}`;
  }
  return ok(headers);
}

async function httpLink(server: string, launch: Extract<McpLaunchConfig, { type: "http" }>): Promise<Result<McpLink>> {
  const headers = httpHeaders(server, launch);
  if ("error" in headers) return headers;
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const transport = new StreamableHTTPClientTransport(new URL(launch.url), { requestInit: { headers: headers.ok } });
  const tokenVar = launch.bearerTokenEnvVar;
  return ok({
    transport,
    describeEnd: () => "",
    // The SDK's StreamableHTTPError carries the HTTP status as its code.
    explain: (message, code) => {
      if (code === 401 || /\b401\b|unauthori[sz]ed/i.test(message)) {
        return tokenVar
          ? `refused the connection as unauthorized (HTTP 401): check the token in ${tokenVar} (bearer_token_env_var of [mcp_servers.${server}])`
          : `refused the connection as unauthorized (HTTP 401): set bearer_token_env_var in [mcp_servers.${server}] to the variable that holds its token`;
      }
      if (code === 403 || /\b403\b/.test(message))
        return `refused the connection (HTTP 403 forbidden): the token in ${tokenVar ?? "(none)"} is not allowed to use it`;
      if (/ECONNREFUSED|Unable to connect|fetch failed/i.test(message))
        return `could not be reached at ${launch.url}: is it running?`;
      return undefined;
    },
  });
}

export function configLink(server: string, launch: McpLaunchConfig): () => Promise<Result<McpLink>> {
  return () => (launch.type === "stdio" ? stdioLink(launch) : httpLink(server, launch));
}

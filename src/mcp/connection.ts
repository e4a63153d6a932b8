/**
 * One MCP server for the length of a session: started with a deadline, its tools listed, each
 * call with its own time limit. When the server dies, the call in flight (or the next one) is
 * told so ("MCP server X exited (code N): <stderr tail>; restarting") and it is started again
 * with exponential backoff, a bounded number of times.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sleep } from "../process/sleep.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import type { McpLink, McpLinkFactory } from "./link.ts";

const log = Log.create("mcp");

export const RESTART_BASE_DELAY_MS = 250;
/** Restart attempts after a death (delays 250 ms, 0.5, 1, 2, 4 s); a call that succeeds afterwards resets the count. */
export const MAX_RESTART_ATTEMPTS = 5;
const MAX_TOOL_PAGES = 50;

/** What a session knows of one server before it starts. */
export interface McpServerTarget {
  /** Unique in the session; the `server` of `server__tool`. */
  name: string;
  /** Where it comes from, for messages: `config.toml`, or `capability root local:/srv/tools`. */
  origin: string;
  link: McpLinkFactory;
  startupTimeoutMs: number;
  toolTimeoutMs: number;
  enabledTools?: string[];
  disabledTools: string[];
  required: boolean;
}

/** A tool as the server lists it (the fields relay uses). */
export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: unknown;
  readOnly: boolean;
}

export type McpState = "starting" | "ready" | "restarting" | "failed" | "closed";

export interface McpStateChange {
  server: string;
  state: McpState | "exited";
  message?: string;
  tools?: number;
}

type SdkClientModule = typeof import("@modelcontextprotocol/sdk/client/index.js");

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `-32001` is the SDK's request timeout, `-32000` a closed connection. */
const errorCode = (e: unknown): unknown => (e as { code?: unknown } | undefined)?.code;

export class McpConnection {
  private state: McpState = "starting";
  private client: Client | undefined;
  private toolList: McpToolInfo[] = [];
  /** Set when the server died and no call has been told yet. */
  private deathNotice: string | undefined;
  private restarting: Promise<void> | undefined;
  private attempts = 0;
  private failure = "";
  private readonly stop = new AbortController();

  constructor(
    readonly target: McpServerTarget,
    private readonly sdk: SdkClientModule,
    private readonly onState: (c: McpStateChange) => void,
  ) {}

  /** After close() (read through a getter: the state changes while a start is awaited). */
  private get closed(): boolean {
    return this.state === "closed";
  }

  get name(): string {
    return this.target.name;
  }

  get tools(): readonly McpToolInfo[] {
    return this.toolList;
  }

  get status(): { state: McpState; failure?: string } {
    return this.state === "failed" ? { state: this.state, failure: this.failure } : { state: this.state };
  }

  /** The first start: no restart when it fails (the session goes on without the server). */
  async start(): Promise<Result<McpToolInfo[]>> {
    const r = await this.connect();
    if (this.closed) {
      await this.client?.close().catch(() => {});
      return err("closed", `MCP server ${this.name}: the session ended while it started`);
    }
    if ("error" in r) {
      this.state = "failed";
      this.failure = r.error.message;
      return r;
    }
    this.state = "ready";
    return ok(this.toolList);
  }

  private async connect(): Promise<Result<null>> {
    const { target } = this;
    const made = await target.link();
    if ("error" in made) return err(made.error.code, `MCP server ${target.name}: ${made.error.message}`);
    const link = made.ok;
    const client = new this.sdk.Client({ name: "relay", version: VERSION }, { capabilities: {} });
    client.onerror = (e) => log.warn("mcp server protocol error", { server: target.name, error: errorText(e) });
    // One deadline for the whole start (initialize and every tools/list page), or the session's end.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), target.startupTimeoutMs);
    const onStop = () => deadline.abort();
    this.stop.signal.addEventListener("abort", onStop);
    const options = { timeout: target.startupTimeoutMs, signal: deadline.signal };
    try {
      await client.connect(link.transport, options);
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const listed = await client.listTools(cursor ? { cursor } : undefined, options);
        for (const t of listed.tools)
          tools.push({
            name: t.name,
            description: t.description ?? t.title ?? "",
            inputSchema: t.inputSchema,
            readOnly: t.annotations?.readOnlyHint === true,
          });
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
      this.toolList = this.filter(tools);
    } catch (e) {
      await client.close().catch(() => {});
      await link.transport.close().catch(() => {});
      return err("mcp_start_failed", this.startFailure(e, link, deadline.signal.aborted));
    } finally {
      clearTimeout(timer);
      this.stop.signal.removeEventListener("abort", onStop);
    }
    this.client = client;
    client.onclose = () => {
      if (this.client === client) this.died(link);
    };
    return ok(null);
  }

  private startFailure(e: unknown, link: McpLink, timedOut: boolean): string {
    const { name, startupTimeoutMs } = this.target;
    const end = link.describeEnd();
    if (end) return `MCP server ${name} exited during start-up${end}`;
    if (errorCode(e) === -32001 || timedOut) {
      return `MCP server ${name} did not finish starting within ${seconds(startupTimeoutMs)} (startup_timeout_sec); raise it in [mcp_servers.${name}] if the server is slow to start`;
    }
    const text = errorText(e);
    const explained = link.explain?.(text, errorCode(e));
    if (explained) return `MCP server ${name} ${explained} (${text.slice(0, 300)})`;
    if (/ENOENT/.test(text))
      return `MCP server ${name} could not be started: ${text}; check "command" (is it installed and on PATH?) and "cwd"`;
    return `MCP server ${name} could not be started: ${text}`;
  }

  private filter(tools: McpToolInfo[]): McpToolInfo[] {
    const { enabledTools, disabledTools } = this.target;
    return tools.filter(
      (t) => (enabledTools === undefined || enabledTools.includes(t.name)) && !disabledTools.includes(t.name),
    );
  }

  private died(link: McpLink): void {
    this.client = undefined;
    if (this.state === "closed") return;
    this.deathNotice = `MCP server ${this.name} exited${link.describeEnd()}; restarting`;
    log.warn("mcp server exited", { server: this.name, how: link.describeEnd() });
    this.onState({ server: this.name, state: "exited", message: this.deathNotice });
    this.state = "restarting";
    this.restarting = this.restartLoop();
  }

  private async restartLoop(): Promise<void> {
    let last = "";
    while (this.attempts < MAX_RESTART_ATTEMPTS) {
      const delay = RESTART_BASE_DELAY_MS * 2 ** this.attempts++;
      // Ends early when the session closes (sleep rejects then; the loop checks `closed`).
      await sleep(delay, this.stop.signal).catch(() => {});
      if (this.closed) return;
      this.onState({
        server: this.name,
        state: "restarting",
        message: `restarting MCP server ${this.name} (attempt ${this.attempts} of ${MAX_RESTART_ATTEMPTS})`,
      });
      const r = await this.connect();
      if (this.closed) {
        await this.client?.close().catch(() => {});
        return;
      }
      if ("ok" in r) {
        this.state = "ready";
        this.restarting = undefined;
        this.onState({
          server: this.name,
          state: "ready",
          tools: this.toolList.length,
          message: `MCP server ${this.name} restarted`,
        });
        return;
      }
      last = r.error.message;
    }
    this.state = "failed";
    this.failure = `it exited and could not be restarted after ${MAX_RESTART_ATTEMPTS} attempts (last: ${last})`;
    this.restarting = undefined;
    this.onState({ server: this.name, state: "failed", message: `MCP server ${this.name} is down: ${this.failure}` });
  }

  /** Calls one tool; the result is the server's `CallToolResult` as it came. */
  async call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<Result<unknown>> {
    const notice = this.takeDeathNotice();
    if (notice) return err("mcp_server_exited", notice);
    if (this.restarting) await this.restarting;
    const notice2 = this.takeDeathNotice();
    if (notice2) return err("mcp_server_exited", notice2);
    const client = this.client;
    if (!client || this.state !== "ready")
      return err("mcp_server_down", `MCP server ${this.name} is not running: ${this.failure || this.state}`);
    const { toolTimeoutMs } = this.target;
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: toolTimeoutMs,
        ...(signal ? { signal } : {}),
      });
      this.attempts = 0;
      return ok(result);
    } catch (e) {
      const died = this.takeDeathNotice();
      if (died) return err("mcp_server_exited", died);
      if (signal?.aborted) return err("cancelled", `the call of ${tool} on MCP server ${this.name} was cancelled`);
      if (errorCode(e) === -32001) {
        return err(
          "mcp_timeout",
          `MCP tool ${tool} of server ${this.name} did not answer within ${seconds(toolTimeoutMs)} (tool_timeout_sec); the server may still be working on it`,
        );
      }
      return err("mcp_call_failed", `MCP server ${this.name} could not run ${tool}: ${errorText(e)}`);
    }
  }

  private takeDeathNotice(): string | undefined {
    const n = this.deathNotice;
    this.deathNotice = undefined;
    return n;
  }

  /** Ends the server (stdio: the process is stopped) and any restart in progress. */
  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    this.stop.abort();
    const client = this.client;
    this.client = undefined;
    await client
      ?.close()
      .catch((e: unknown) => log.warn("mcp close failed", { server: this.name, error: errorText(e) }));
    await this.restarting;
  }
}

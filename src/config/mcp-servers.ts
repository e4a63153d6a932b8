/**
 * `[mcp_servers.NAME]` in config.toml, in Codex's shape, so a Codex block can be pasted as is:
 *
 *   [mcp_servers.docs]                      # stdio
 *   command = "npx"  args = ["-y", "docs-mcp"]  env = { KEY = "v" }  env_vars = ["TOKEN"]  cwd = "/srv"
 *   [mcp_servers.tracker]                   # streamable HTTP
 *   url = "https://mcp.example.com/mcp"  bearer_token_env_var = "TRACKER_TOKEN"
 *   http_headers = { "X-Team" = "core" }  env_http_headers = { "X-Key" = "TRACKER_KEY" }
 *   # both: enabled, required, startup_timeout_sec (10), tool_timeout_sec (60), enabled_tools, disabled_tools
 *
 * Each server is checked on its own: a broken one is reported (its name and key) and skipped,
 * the others still start. Unknown keys are warnings (Codex adds keys over time).
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { envVarName, httpUrl } from "../util/schema-fields.ts";
import { describeIssues } from "../util/schema-issues.ts";
import { unknownKeys } from "./unknown-keys.ts";

export const DEFAULT_STARTUP_TIMEOUT_SEC = 10;
export const DEFAULT_TOOL_TIMEOUT_SEC = 60;

const seconds = lazySchema(() => z.number().positive());
const STDIO_KEYS = ["command", "args", "env", "env_vars", "cwd"] as const;
const HTTP_KEYS = ["url", "bearer_token_env_var", "http_headers", "env_http_headers"] as const;

export const McpServerConfigSchema = lazySchema(() =>
  z
    .object({
      command: z.string().min(1).optional(),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      /** Names of variables passed through from relay's environment. */
      env_vars: z.array(envVarName).default([]),
      cwd: z.string().min(1).optional(),
      url: httpUrl.optional(),
      bearer_token_env_var: envVarName.optional(),
      http_headers: z.record(z.string(), z.string()).default({}),
      /** Header name → name of the variable holding its value. */
      env_http_headers: z.record(z.string(), envVarName).default({}),
      enabled: z.boolean().default(true),
      /** The session does not start when this server cannot. */
      required: z.boolean().default(false),
      startup_timeout_sec: seconds.optional(),
      /** Codex's older spelling of the start-up timeout. */
      startup_timeout_ms: z.number().int().positive().optional(),
      tool_timeout_sec: seconds.optional(),
      enabled_tools: z.array(z.string()).optional(),
      disabled_tools: z.array(z.string()).default([]),
    })
    .superRefine((c, ctx) => {
      if (c.command === undefined && c.url === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["command"],
          message: 'needs "command" (a stdio server) or "url" (a streamable HTTP server)',
        });
      if (c.command !== undefined && c.url !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["url"],
          message: 'cannot be given with "command": a server is either stdio (command) or streamable HTTP (url)',
        });
    }),
);
export type McpServerConfig = z.output<typeof McpServerConfigSchema>;

export type McpLaunchConfig =
  | { type: "stdio"; command: string; args: string[]; env: Record<string, string>; envVars: string[]; cwd?: string }
  | {
      type: "http";
      url: string;
      bearerTokenEnvVar?: string;
      headers: Record<string, string>;
      envHeaders: Record<string, string>;
    };

/** One configured server, checked, ready to start. */
export interface McpServerEntry {
  name: string;
  launch: McpLaunchConfig;
  startupTimeoutMs: number;
  toolTimeoutMs: number;
  enabledTools?: string[];
  disabledTools: string[];
  required: boolean;
}

export interface McpServersConfig {
  servers: McpServerEntry[];
  /** Names of servers with `enabled = false`. */
  disabled: string[];
  /** Entries that cannot start: which and why (the key, what it must be). */
  invalid: Array<{ name: string; message: string }>;
  warnings: string[];
}

/** Checks `[mcp_servers]` (the raw TOML value); `where` names the file in messages. */
export function parseMcpServers(raw: unknown, where = "config.toml"): McpServersConfig {
  const out: McpServersConfig = { servers: [], disabled: [], invalid: [], warnings: [] };
  if (raw === undefined) return out;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    out.invalid.push({
      name: "(all)",
      message: `${where}: mcp_servers must be a table of servers, e.g. [mcp_servers.docs] with command = "..."`,
    });
    return out;
  }
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    const at = `${where} [mcp_servers.${name}]`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      out.invalid.push({
        name,
        message: `${at} must be a table (command = "..." or url = "..."); this server is skipped`,
      });
      continue;
    }
    for (const w of unknownKeys(McpServerConfigSchema, entry, "")) out.warnings.push(`${at}: ${w}`);
    const parsed = McpServerConfigSchema.safeParse(entry);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error.issues, entry);
      out.invalid.push({
        name,
        message: `${at}: ${issues.map((i) => i.message).join("; ")}; this server is skipped, the others start`,
      });
      continue;
    }
    const c = parsed.data;
    if (!c.enabled) {
      out.disabled.push(name);
      continue;
    }
    const given = entry as Record<string, unknown>;
    const misplaced = (c.command !== undefined ? HTTP_KEYS : STDIO_KEYS).filter(
      (k) => k in given && k !== "command" && k !== "url",
    );
    for (const k of misplaced)
      out.warnings.push(
        `${at}: "${k}" is for ${c.command !== undefined ? "HTTP servers (url)" : "stdio servers (command)"}; ignored`,
      );
    out.servers.push({
      name,
      launch:
        c.command !== undefined
          ? {
              type: "stdio",
              command: c.command,
              args: c.args,
              env: c.env,
              envVars: c.env_vars,
              ...(c.cwd ? { cwd: c.cwd } : {}),
            }
          : {
              type: "http",
              url: c.url!,
              headers: c.http_headers,
              envHeaders: c.env_http_headers,
              ...(c.bearer_token_env_var ? { bearerTokenEnvVar: c.bearer_token_env_var } : {}),
            },
      startupTimeoutMs: Math.round(
        (c.startup_timeout_sec ??
          (c.startup_timeout_ms !== undefined ? c.startup_timeout_ms / 1000 : DEFAULT_STARTUP_TIMEOUT_SEC)) * 1000,
      ),
      toolTimeoutMs: Math.round((c.tool_timeout_sec ?? DEFAULT_TOOL_TIMEOUT_SEC) * 1000),
      ...(c.enabled_tools ? { enabledTools: c.enabled_tools } : {}),
      disabledTools: c.disabled_tools,
      required: c.required,
    });
  }
  return out;
}

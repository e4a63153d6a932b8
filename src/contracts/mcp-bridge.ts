/**
 * The wire contract for MCP stdio servers that run on the executor host: the orchestrator reads
 * a capability root's `.mcp.json`, starts a server there, writes JSON-RPC messages to its stdin,
 * and gets each stdout message and the exit back as notifications. The executor does not speak
 * MCP itself: it moves newline-delimited JSON between the server's pipes and the framed protocol.
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./mcp-bridge-checks.generated.ts";
import { defineMethod, defineNotification, specSchemas } from "./method.ts";

/** The manifest's file name at a capability root. */
export const MCP_MANIFEST_NAME = ".mcp.json";

/** One `mcpServers` entry of `.mcp.json` (the shape Claude Code and others use). */
export const McpManifestServerSchema = lazySchema(() =>
  z.object({
    command: z.string().min(1, "command must not be empty"),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
  }),
);

/** `.mcp.json`: unknown keys (e.g. a `type` or `url` entry) are tolerated by the reader. */
export const McpManifestSchema = lazySchema(() =>
  z.object({
    mcpServers: z.record(z.string(), z.unknown()).default({}),
  }),
);

/** A manifest entry ready to start: command and cwd resolved on the executor host. */
export const McpStdioServerSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    command: z.string(),
    args: z.array(z.string()),
    env: z.record(z.string(), z.string()),
    /** Absolute, on the executor host. */
    cwd: z.string(),
  }),
);
export type McpStdioServer = z.infer<typeof McpStdioServerSchema>;

export const McpManifestMethod = defineMethod(
  "mcp/manifest",
  lazySchema(() => z.object({ root: z.string() })),
  lazySchema(() =>
    z.object({
      /** False when the root has no `.mcp.json` (then `servers` is empty and nothing is wrong). */
      found: z.boolean(),
      path: z.string(),
      servers: z.array(McpStdioServerSchema),
      /** Entries that were skipped, one message each (naming the entry and the key). */
      warnings: z.array(z.string()),
    }),
  ),
  [],
);

/** `server_id` is chosen by the orchestrator, so it can route the first stdout message before `start` is answered. */
const ServerId = lazySchema(() => z.string().min(1).max(200));

export const McpStartMethod = defineMethod(
  "mcp/start",
  lazySchema(() =>
    z.object({
      server_id: ServerId,
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      /** Added to the executor host's basic environment (HOME, PATH, USER, ...). */
      env: z.record(z.string(), z.string()).default({}),
      cwd: z.string().min(1),
    }),
  ),
  lazySchema(() => z.object({ pid: z.number().int() })),
  ["invalid_params", "too_many_servers", "spawn_failed"],
);

export const McpSendMethod = defineMethod(
  "mcp/send",
  lazySchema(() => z.object({ server_id: ServerId, message: z.unknown() })),
  lazySchema(() => z.object({})),
  ["not_running"],
);

export const McpStopMethod = defineMethod(
  "mcp/stop",
  lazySchema(() => z.object({ server_id: ServerId })),
  lazySchema(() => z.object({ was_running: z.boolean() })),
  [],
);

/** One JSON value the server wrote as a line on stdout. */
export const McpMessageNotification = defineNotification(
  "mcp/message",
  lazySchema(() => z.object({ server_id: ServerId, message: z.unknown() })),
);

/**
 * A stdout line that could not be forwarded (not JSON, or too large): the reason, and for a line
 * too large its first and last bytes (`edges`), where the orchestrator finds the request id it answers.
 */
export const McpBadLineNotification = defineNotification(
  "mcp/bad_line",
  lazySchema(() => z.object({ server_id: ServerId, reason: z.string(), edges: z.string().optional() })),
);

/** The server process ended (after its stdout was read to the end). */
export const McpExitedNotification = defineNotification(
  "mcp/exited",
  lazySchema(() =>
    z.object({
      server_id: ServerId,
      code: z.number().int().nullable(),
      signal: z.string().nullable(),
      stderr_tail: z.string(),
    }),
  ),
);

/**
 * The schemas of the MCP methods and notifications, by the names of their generated checks
 * (npm run build:validators writes them to mcp-protocol-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(
  checks,
  specSchemas({
    mcpManifest: McpManifestMethod,
    mcpStart: McpStartMethod,
    mcpSend: McpSendMethod,
    mcpStop: McpStopMethod,
    mcpMessage: McpMessageNotification,
    mcpBadLine: McpBadLineNotification,
    mcpExited: McpExitedNotification,
  }),
);

/**
 * Reads a capability root's `.mcp.json` on the executor host. Relative `cwd` and command paths
 * are resolved against the root here, where the files are; a bare command name (`node`) is left
 * to PATH. A broken entry is skipped with a message naming it and its key; the others are kept.
 */
import { readFile, realpath } from "node:fs/promises";
import path from "node:path";
import {
  MCP_MANIFEST_NAME,
  McpManifestSchema,
  McpManifestServerSchema,
  type McpStdioServer,
} from "../contracts/mcp-bridge.ts";
import { describeIssues } from "../util/schema-issues.ts";

const MAX_MANIFEST_BYTES = 1024 * 1024;

export interface ReadManifest {
  found: boolean;
  path: string;
  servers: McpStdioServer[];
  warnings: string[];
}

export async function readMcpManifest(root: string): Promise<ReadManifest> {
  const file = path.join(root, MCP_MANIFEST_NAME);
  const none = (warnings: string[] = []): ReadManifest => ({ found: false, path: file, servers: [], warnings });
  if (!path.isAbsolute(root)) return none([`${root}: a capability root must be an absolute path on the executor host`]);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? none() : none([`cannot read ${file}: ${(e as Error).message}`]);
  }
  if (text.length > MAX_MANIFEST_BYTES) return none([`${file} is over ${MAX_MANIFEST_BYTES} bytes; not read`]);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return none([`${file} is not valid JSON: ${(e as Error).message}; fix it or remove it`]);
  }
  const top = McpManifestSchema.safeParse(raw);
  if (!top.success)
    return none([
      `${file}: "mcpServers" must be an object of servers by name, e.g. {"mcpServers": {"files": {"command": "node", "args": ["server.js"]}}}`,
    ]);
  const servers: McpStdioServer[] = [];
  const warnings: string[] = [];
  // Paths are resolved against the root's real path, so they still name the same files once the
  // server's own cwd is set (a root given through a relative link such as /proc/self/cwd).
  const base = await realpath(root).catch(() => root);
  for (const [name, entry] of Object.entries(top.data.mcpServers)) {
    const parsed = McpManifestServerSchema.safeParse(entry);
    if (!parsed.success) {
      const issues = describeIssues(parsed.error.issues, entry, { objectName: "an object" });
      const isHttp = entry !== null && typeof entry === "object" && "url" in entry;
      warnings.push(
        `${file}: server "${name}" skipped: ${isHttp ? "only stdio servers (command, args, env, cwd) run from a capability root; put HTTP servers in config.toml [mcp_servers]" : issues.map((i) => i.message).join("; ")}`,
      );
      continue;
    }
    const cwd = path.resolve(base, parsed.data.cwd ?? ".");
    const command = parsed.data.command.includes("/") ? path.resolve(base, parsed.data.command) : parsed.data.command;
    servers.push({ name, command, args: parsed.data.args, env: parsed.data.env, cwd });
  }
  return { found: true, path: file, servers, warnings };
}

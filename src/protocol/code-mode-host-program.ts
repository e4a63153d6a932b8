/**
 * Which program serves code mode, and starting it: RELAY_CODE_MODE_HOST_PATH, a
 * `relay-code-mode-host` beside the executable or on PATH, else this binary's own
 * `code-mode-host` subcommand.
 */
import path from "node:path";
import type { Result } from "../util/result.ts";
import { findOnPath, isExecutableFile } from "../util/which.ts";
import { type ChildPeer, spawnPeer, spawnSelf } from "./child.ts";

export const HOST_PATH_ENV = "RELAY_CODE_MODE_HOST_PATH";
export const HOST_BINARY_NAME = process.platform === "win32" ? "relay-code-mode-host.exe" : "relay-code-mode-host";

export type HostProgram = { kind: "path"; path: string; source: "env" | "sibling" | "path" } | { kind: "self" };

/**
 * RELAY_CODE_MODE_HOST_PATH, else `relay-code-mode-host` next to the executable, else one on
 * PATH, else this binary's own `code-mode-host` subcommand.
 */
export function resolveHostProgram(env: NodeJS.ProcessEnv = process.env, execPath = process.execPath): HostProgram {
  const override = env[HOST_PATH_ENV];
  if (override) return { kind: "path", path: override, source: "env" };
  const sibling = path.join(path.dirname(execPath), HOST_BINARY_NAME);
  if (isExecutableFile(sibling)) return { kind: "path", path: sibling, source: "sibling" };
  const onPath = findOnPath(HOST_BINARY_NAME, env.PATH, { exts: [""] });
  return onPath ? { kind: "path", path: onPath, source: "path" } : { kind: "self" };
}

export function spawnHost(program: HostProgram): Result<ChildPeer> {
  const opts = { name: "code-mode-host" };
  return program.kind === "path" ? spawnPeer([program.path], opts) : spawnSelf("code-mode-host", [], opts);
}

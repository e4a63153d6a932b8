/** RELAY_HOME (default `~/.relay`) and the fixed paths inside it. */
import os from "node:os";
import path from "node:path";

type Env = Record<string, string | undefined>;

/** `$RELAY_HOME` made absolute (a leading `~` expands), or `~/.relay` when unset or empty. */
export function relayHome(env: Env = process.env): string {
  const raw = env.RELAY_HOME?.trim();
  if (!raw) return path.join(os.homedir(), ".relay");
  if (raw === "~") return os.homedir();
  if (raw.startsWith("~/") || raw.startsWith("~\\")) return path.join(os.homedir(), raw.slice(2));
  return path.resolve(raw);
}

export const configPath = (home: string): string => path.join(home, "config.toml");
export const sessionsDir = (home: string): string => path.join(home, "sessions");
export const stateDbPath = (home: string): string => path.join(home, "state.sqlite");
export const memoriesDir = (home: string): string => path.join(home, "memories");
export const inftyDir = (home: string): string => path.join(home, "infty");
export const logsDir = (home: string): string => path.join(home, "logs");

export interface RelayPaths {
  home: string;
  config: string;
  sessions: string;
  stateDb: string;
  memories: string;
  infty: string;
  logs: string;
}

export function relayPaths(home: string = relayHome()): RelayPaths {
  return {
    home,
    config: configPath(home),
    sessions: sessionsDir(home),
    stateDb: stateDbPath(home),
    memories: memoriesDir(home),
    infty: inftyDir(home),
    logs: logsDir(home),
  };
}

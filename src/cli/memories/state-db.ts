/** The state DB and [memories] settings every `relay memories` subcommand opens, failing with usage's exit code. */

import { loadMemorySettingsWithWarnings, type MemorySettings, stateDbSpec } from "../../config/memories.ts";
import { openStateDb, type StateDb } from "../../memories/store/index.ts";
import { ExitCode, fail, warn } from "../usage.ts";

export const DB_HELP =
  "state DB: a postgres:// URL or a SQLite file (default: $RELAY_MEMORIES_DB, then [memories] db, then $RELAY_HOME/state.sqlite)";

/** `settings`: the [memories] settings where the caller has them already, else read here. */
export async function openDb(spec: string | undefined, home: string, settings?: MemorySettings): Promise<StateDb> {
  const r = await openStateDb(stateDbSpec(home, settings ?? (await settingsFor(home)), spec));
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

export async function settingsFor(home: string): Promise<MemorySettings> {
  const r = await loadMemorySettingsWithWarnings(home);
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  warn(r.ok.warnings);
  return r.ok.settings;
}

/** The run a `relay infty` subcommand is given: a full id, `last`, or a unique prefix (infty/run-ref.ts). */
import { relayHome } from "../../home/home.ts";
import { resolveRunRef } from "../../infty/run-ref.ts";
import { RunStore } from "../../infty/run-store.ts";
import { ExitCode, fail } from "../usage.ts";

/** The run id `ref` names; a usage error (exit 2) with the candidates or the fix otherwise. */
export async function runArg(ref: string): Promise<string> {
  const r = await resolveRunRef(relayHome(), ref);
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

/** The run `ref` names, loaded (read only). */
export async function loadRun(ref: string): Promise<RunStore> {
  const r = await RunStore.load(relayHome(), await runArg(ref));
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

/** What the argument's help says it takes. */
export const RUN_ARG_HELP =
  "a run id, its unique beginning or end (the tag in progress lines), or last (the most recently updated run)";

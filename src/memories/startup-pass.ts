/**
 * The start-up pass's own process (`relay memories consolidate --startup <json>`): the session
 * only decides and spawns (startup.ts); the DB, the engines and the pipeline load here.
 */
import { z } from "zod";
import { applyOverrides, type ConfigOverrides, loadConfig } from "../config/config.ts";
import { loadMemorySettings, type MemorySettings, stateDbSpec } from "../config/memories.ts";
import { memoriesDir } from "../home/home.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { buildEngines, type Engines } from "./engines.ts";
import { newWorkerId } from "./holder.ts";
import { consolidateMemories, leaseLines, summaryLine } from "./pipeline.ts";
import { type Env, type PassArg, PassArgSchema, STARTUP_FLAG, startupLog } from "./startup.ts";
import { openStateDb, type StateDb } from "./store/db.ts";
import { claimStartupSlot } from "./store/startup.ts";

interface PassInputs {
  sessionId: string;
  settings: MemorySettings;
  engines: Engines;
  offline: boolean;
}

/** The argument, config.toml with the session's provider settings on top, and the engines. */
async function passInputs(home: string, arg: string, env: Env): Promise<Result<PassInputs>> {
  let parsed: PassArg;
  try {
    const p = PassArgSchema.safeParse(JSON.parse(arg));
    if (!p.success) return err("usage", `bad ${STARTUP_FLAG} argument: ${z.prettifyError(p.error)}`);
    parsed = p.data;
  } catch (e) {
    return err("usage", `bad ${STARTUP_FLAG} argument: ${errorMessage(e)}`);
  }
  const loaded = await loadConfig(home);
  if ("error" in loaded) return loaded;
  const settings = await loadMemorySettings(home);
  if ("error" in settings) return settings;
  const config = applyOverrides(loaded.ok.config, parsed.overrides as ConfigOverrides);
  if ("error" in config) return err(config.error.code, `the session's settings: ${config.error.message}`);
  const offline = config.ok.model_provider === "scripted";
  const s = settings.ok;
  const engines = buildEngines(
    home,
    config.ok,
    s,
    { extractor: s.extractor, consolidator: s.consolidator, offline },
    env,
  );
  if ("error" in engines) return engines;
  return ok({ sessionId: parsed.session_id, settings: s, engines: engines.ok, offline });
}

/** One pass; every word goes to the log. The exit code: 0 ran or skipped, 1 failed, 2 bad input. */
export async function runStartupPass(home: string, arg: string, env: Env = process.env): Promise<number> {
  const log = startupLog(home);
  const inputs = await passInputs(home, arg, env);
  if ("error" in inputs) {
    log(`not run: ${inputs.error.message}`);
    return 2;
  }
  const opened = await openStateDb(stateDbSpec(home, inputs.ok.settings, undefined, env));
  if ("error" in opened) {
    log(`not run: ${opened.error.message}`);
    return 2;
  }
  let end: { line: string; code: number };
  try {
    end = await passWithDb(home, opened.ok, inputs.ok, log);
  } finally {
    await opened.ok.close();
  }
  // Last, after the DB is closed: a reader of the log knows the pass has let go of everything.
  log(end.line);
  return end.code;
}

/** The interval guard, then prune + phase 1 + phase 2; the line that ends the log of this pass. */
async function passWithDb(
  home: string,
  state: StateDb,
  p: PassInputs,
  log: (text: string) => void,
): Promise<{ line: string; code: number }> {
  const s = p.settings;
  const workerId = newWorkerId();
  const now = Math.floor(Date.now() / 1000);
  const slot = await claimStartupSlot(state, { workerId, intervalSeconds: s.min_startup_interval_seconds, now });
  if ("error" in slot) return { line: `failed: ${slot.error.message}`, code: 1 };
  if (slot.ok.kind === "skipped_interval") {
    const ago = Math.max(0, now - slot.ok.lastStartedAt);
    return {
      line: `skipped: the last start-up pass began ${ago} s ago (min_startup_interval_seconds = ${s.min_startup_interval_seconds})`,
      code: 0,
    };
  }
  const { extractor, consolidator, extractorKind, consolidatorKind } = p.engines;
  log(
    `running for session ${p.sessionId}: extractor=${extractorKind} consolidator=${consolidatorKind}${p.offline ? " (offline: the session is scripted)" : ""}, at most ${s.max_rollouts_per_startup} rollout(s)`,
  );
  const r = await consolidateMemories({
    state,
    relayHome: home,
    memoriesRoot: memoriesDir(home),
    settings: s,
    extractor,
    consolidator,
    maxClaims: s.max_rollouts_per_startup,
    excludeThreadId: p.sessionId,
    workerId,
  });
  if ("error" in r) return { line: `failed: ${r.error.message}`, code: 1 };
  for (const l of leaseLines(r.ok)) log(l);
  const failed =
    r.ok.phase2?.status === "failed" || (r.ok.phase1?.outcomes.some((x) => x.status === "failed") ?? false);
  return { line: `${failed ? "failed" : "done"}: ${summaryLine(r.ok)}`, code: failed ? 1 : 0 };
}

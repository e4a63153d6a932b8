/**
 * Which extractor (phase 1) and consolidator (phase 2) a run uses, built from a relay config:
 * `relay memories consolidate` (flags, then `[memories] extractor` / `consolidator`) and the
 * start-up pass (the session's provider settings) choose the same way.
 */

import { applyOverrides, type RelayConfig } from "../config/config.ts";
import type { MemorySettings } from "../config/memories.ts";
import { createModelClient, DEFAULT_BASE_URL, isOpenAiHost } from "../model/factory.ts";
import { err, ok, type Result } from "../util/result.ts";
import { agentConsolidator, type Consolidator, heuristicConsolidator } from "./consolidate.ts";
import { type Extractor, heuristicExtractor, modelExtractor } from "./extract.ts";

export type ExtractorKind = MemorySettings["extractor"];
export type ConsolidatorKind = MemorySettings["consolidator"];

/**
 * Whether sampling can work without a first failing request: the provider is scripted, the
 * base URL is not api.openai.com (a local server), or the API key variable is set.
 */
export function modelUsable(c: RelayConfig, env: Record<string, string | undefined> = process.env): boolean {
  if (c.model_provider === "scripted") return true;
  if (!isOpenAiHost(c.base_url ?? (env.OPENAI_BASE_URL?.trim() || DEFAULT_BASE_URL))) return true;
  return Boolean(env[c.api_key_env]?.trim());
}

export interface EngineChoice {
  extractor: ExtractorKind;
  consolidator: ConsolidatorKind;
  /** Model for both phases, over `[memories] extract_model` / `consolidation_model` and `model`. */
  model?: string;
  /** SCRIPTED consolidation agent (tests). */
  script?: string;
  /** SCRIPTED extractor (tests). */
  extractScript?: string;
  /** No model may be asked (e.g. the session is scripted): auto picks the heuristics. */
  offline?: boolean;
}

export interface Engines {
  extractor: Extractor;
  consolidator: Consolidator;
  extractorKind: "model" | "heuristic";
  consolidatorKind: "agent" | "heuristic";
}

/** auto: the model (agent) when one is usable, else the offline heuristic. */
export function buildEngines(
  home: string,
  base: RelayConfig,
  settings: MemorySettings,
  c: EngineChoice,
  env: Record<string, string | undefined> = process.env,
): Result<Engines> {
  const usable = !c.offline && modelUsable(base, env);
  const extractorKind = c.extractor === "auto" ? (usable || c.extractScript ? "model" : "heuristic") : c.extractor;
  const consolidatorKind = c.consolidator === "auto" ? (usable || c.script ? "agent" : "heuristic") : c.consolidator;
  let extractor: Extractor = heuristicExtractor;
  if (extractorKind === "model") {
    const model = c.model ?? settings.extract_model ?? base.model;
    try {
      const client = c.extractScript
        ? createModelClient({ provider: "scripted", model, scriptPath: c.extractScript })
        : createModelClient({
            provider: base.model_provider,
            model,
            baseUrl: base.base_url,
            apiKeyEnv: base.api_key_env,
          });
      extractor = modelExtractor(client, model, {
        inputTokenBudget: Math.floor((base.model_context_window ?? 200_000) * 0.7),
      });
    } catch (e) {
      return err("model_config", `cannot build the extraction model: ${(e as Error).message}`);
    }
  }
  let consolidator: Consolidator = heuristicConsolidator;
  if (consolidatorKind === "agent") {
    const cfg = applyOverrides(base, {
      model: c.model ?? settings.consolidation_model ?? (c.script ? "scripted" : undefined),
    });
    if ("error" in cfg) return cfg;
    consolidator = agentConsolidator({ home, config: cfg.ok, scriptPath: c.script });
  }
  return ok({ extractor, consolidator, extractorKind, consolidatorKind });
}

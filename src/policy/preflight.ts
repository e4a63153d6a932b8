/**
 * Checks made before a session or run writes anything: the working directory exists, and the
 * configured provider has its credentials. A problem here is bad usage (exit 2): nothing is
 * started, so no rollout or failed run is left behind. `relay doctor` reports the same facts.
 */
import { statSync } from "node:fs";
import path from "node:path";
import type { RelayConfig } from "../config/config.ts";
import { DEFAULT_BASE_URL } from "../model/factory.ts";
import { err, ok, type Result } from "../util/result.ts";

/** The base URL a model client will use: config, then OPENAI_BASE_URL, then OpenAI's. */
export function effectiveBaseUrl(config: RelayConfig, env: NodeJS.ProcessEnv): string {
  return config.base_url ?? (env.OPENAI_BASE_URL?.trim() || DEFAULT_BASE_URL);
}

/**
 * A server on this machine or a private network (Ollama, llama.cpp, vLLM on a box in the
 * office...), which usually wants no key: loopback, RFC 1918 and link-local IPv4, IPv6 unique
 * local and link-local addresses, `localhost` and `.local` names.
 */
export function isLocalUrl(url: string): boolean {
  try {
    const h = new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
    if (h === "localhost" || h.endsWith(".localhost") || h.endsWith(".local") || h === "::1" || h === "0.0.0.0")
      return true;
    const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(h);
    if (v4) return privateV4(Number(v4[1]), Number(v4[2]));
    return /^f[cd][0-9a-f]{2}:|^fe[89ab][0-9a-f]:/.test(h);
  } catch {
    return false;
  }
}

/** Loopback, RFC 1918 or link-local, by the first two octets. */
function privateV4(a: number, b: number): boolean {
  return (
    a === 127 || a === 10 || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31)
  );
}

/** The URL without user info, query or fragment, for messages. */
export function showUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(an invalid URL)";
  }
}

export type CredentialState = "not_needed" | "set" | "local_without_key" | "missing";

/** Whether the provider's key is there; only the variable's name is ever looked at, not its value. */
export function credentialState(config: RelayConfig, env: NodeJS.ProcessEnv): CredentialState {
  if (config.model_provider === "scripted") return "not_needed";
  if (env[config.api_key_env]?.trim()) return "set";
  return isLocalUrl(effectiveBaseUrl(config, env)) ? "local_without_key" : "missing";
}

export function checkCredentials(config: RelayConfig, env: NodeJS.ProcessEnv): Result<null> {
  if (credentialState(config, env) !== "missing") return ok(null);
  const v = config.api_key_env;
  return err(
    "usage",
    `${v} is not set, and the ${config.model_provider} provider at ${showUrl(effectiveBaseUrl(config, env))} needs it. ` +
      `Set it (export ${v}=...), name the variable that holds your key (--api-key-env NAME, or api_key_env in config.toml), ` +
      `or use a local server: --provider openai-chat --base-url http://localhost:11434/v1. Nothing was started.`,
  );
}

/** `--script FILE` must name a readable file: the scripted model would fail only after the session started. */
export function checkScriptFile(file: string | undefined): Result<null> {
  if (file === undefined) return ok(null);
  const abs = path.resolve(file);
  const st = statSync(abs, { throwIfNoEntry: false });
  if (!st) return err("usage", `--script ${file}: no such file (${abs}). Nothing was started.`);
  if (!st.isFile()) return err("usage", `--script ${file}: not a file (${abs}). Nothing was started.`);
  return ok(null);
}

/** A prompt must say something: an empty one would only spend model requests. */
export function checkPrompt(prompt: string | undefined): Result<null> {
  if (prompt === undefined || prompt.trim() !== "") return ok(null);
  return err(
    "usage",
    `the prompt is empty; say what to do, e.g. relay run "make the tests pass". Nothing was started.`,
  );
}

/** `-C DIR` must name an existing directory; it is never created. */
export function checkWorkingDir(dir: string | undefined): Result<null> {
  if (dir === undefined) return ok(null);
  const abs = path.resolve(dir);
  const st = statSync(abs, { throwIfNoEntry: false });
  if (!st)
    return err("usage", `-C ${dir}: no such directory (${abs}); create it first or pick another. Nothing was started.`);
  if (!st.isDirectory()) return err("usage", `-C ${dir}: not a directory (${abs}). Nothing was started.`);
  return ok(null);
}

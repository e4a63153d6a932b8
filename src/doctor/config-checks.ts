/** config.toml, and the model credentials a session with that config would use (never a secret's value). */
import type { LoadedConfig, RelayConfig } from "../config/config.ts";
import { configPath } from "../home/home.ts";
import { credentialState, effectiveBaseUrl, showUrl } from "../policy/preflight.ts";
import type { Result } from "../util/result.ts";
import { check, type DoctorCheck } from "./check.ts";

export function configCheck(home: string, loaded: Result<LoadedConfig>): DoctorCheck {
  const name = "config";
  if ("error" in loaded) {
    return check(
      name,
      "missing",
      loaded.error.message,
      true,
      `fix ${configPath(home)} (or move it aside to run with the defaults)`,
    );
  }
  const { path: file, exists, warnings } = loaded.ok;
  const base = exists ? file : `no config.toml: defaults (${file} would be read)`;
  const notes = warnings.length
    ? `; ${warnings.length} warning(s): ${warnings.map((w) => w.replace(`${file}: `, "")).join("; ")}`
    : "";
  return check(name, "ok", base + notes, true);
}

// ---- model credentials ---------------------------------------------------------------------------

export function credentialsCheck(config: RelayConfig, env: NodeJS.ProcessEnv, configOk: boolean): DoctorCheck {
  const name = "model credentials";
  const provider = config.model_provider;
  const from = configOk ? "" : " (config.toml did not load: checked the defaults)";
  if (provider === "scripted") return check(name, "ok", `provider scripted: no credentials needed${from}`, true);
  const varName = config.api_key_env;
  const baseUrl = effectiveBaseUrl(config, env);
  const where = `provider ${provider}, model ${config.model}, at ${showUrl(baseUrl)}`;
  // Only the variable's name and whether it is set: nothing about its value.
  const state = credentialState(config, env);
  if (state === "set") return check(name, "ok", `a session would use ${varName} (set) for ${where}${from}`, true);
  // The rule relay run applies: a server on this machine or a private network needs no key.
  if (state === "local_without_key")
    return check(
      name,
      "ok",
      `no key needed for ${where} (a local or private server; ${varName} is not set, so none is sent)${from}`,
      true,
    );
  return check(
    name,
    "missing",
    `${varName} is not set (${where})${from}`,
    true,
    `export ${varName}=... (or set api_key_env in ${configPath("$RELAY_HOME")} to the variable that holds your key)`,
  );
}

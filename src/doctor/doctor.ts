/**
 * `relay doctor`: whether this host can run relay sessions, one check at a time, each with what
 * to do when it fails. Nothing here prints: the CLI renders the checks (or prints them as JSON).
 * Each check is in the module of its part (sandbox-checks.ts, storage-checks.ts, config-checks.ts,
 * process-checks.ts); a check's shape and the report are check.ts.
 */
import { applyOverrides, type ConfigOverrides, defaultConfig, loadConfig } from "../config/config.ts";
import { probeLandlock, probeSandbox, type SandboxSupport } from "../sandbox/index.ts";
import { errorMessage } from "../util/result.ts";
import { check, type DoctorCheck, guarded } from "./check.ts";
import { configCheck, credentialsCheck } from "./config-checks.ts";
import { codeModeCheck, executorChecks, gitCheck, ptyCheck } from "./process-checks.ts";
import {
  bwrapCheck,
  landlockCheck,
  sandboxCheck,
  seccompCheck,
  usernsCheck,
  workspaceVerdict,
} from "./sandbox-checks.ts";
import { diskCheck, homeCheck } from "./storage-checks.ts";

export interface DoctorOptions {
  /** RELAY_HOME, already resolved. */
  home: string;
  /** The environment relay runs in: credentials are looked up here and children get it. */
  env: NodeJS.ProcessEnv;
  /** Bound on each child's answer (executor, code-mode host); default 30 s. */
  timeoutMs?: number;
  /** The workspace the sandbox check decides for (a git one needs more); default the cwd. */
  cwd?: string;
  /** `run`'s model flags (--provider, --base-url, -m, --api-key-env), applied over config.toml. */
  overrides?: ConfigOverrides;
}

/** Every check, in the order they are shown. */
export async function runDoctorChecks(opts: DoctorOptions): Promise<DoctorCheck[]> {
  const { home, env } = opts;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const loaded = await loadConfig(home);
  const base = "ok" in loaded ? loaded.ok.config : defaultConfig();
  const overridden = opts.overrides ? applyOverrides(base, opts.overrides) : undefined;
  const config = overridden && "ok" in overridden ? overridden.ok : base;
  const configOk = "ok" in loaded;

  // The probes share the native module: one after the other, so it is compiled once.
  let support: SandboxSupport | undefined;
  const sandbox = await guarded("sandbox", config.sandbox_mode !== "danger-full-access", async () => {
    support = await probeSandbox({ bwrap: true });
    return workspaceVerdict(sandboxCheck(support, config), config, opts.cwd ?? process.cwd(), env);
  });
  const linux = process.platform === "linux";
  const landlock = linux
    ? await guarded("landlock", false, async () => landlockCheck(support?.landlock ?? (await probeLandlock())))
    : landlockCheck(undefined);
  const seccomp = linux
    ? await guarded("seccomp", false, async () => seccompCheck(support?.landlock ?? (await probeLandlock())))
    : seccompCheck(undefined);
  const userns = await guarded("user namespaces", false, usernsCheck);
  const bwrap = await guarded("bubblewrap", false, () => bwrapCheck(support?.bwrap));

  const homeResult = await guarded("relay home", true, () => homeCheck(home));
  const disk =
    homeResult.status === "ok"
      ? await guarded("disk space", false, () => diskCheck(home))
      : check("disk space", "warn", "not known: the home check failed", false);
  // The processes run side by side: each one's wait is bounded by its own exit or answer.
  const [pty, [executor, containment], codeMode] = await Promise.all([
    guarded("pty", true, () => ptyCheck(env)),
    executorChecks(env, config, timeoutMs).catch(
      (e: unknown) =>
        [
          check("executor", "missing", `the check itself failed: ${errorMessage(e)}`, true),
          check("containment", "warn", "not known: the executor check failed", false),
        ] as const,
    ),
    guarded("code-mode host", true, () => codeModeCheck(env, timeoutMs)),
  ]);
  const cfg = configCheck(home, loaded);
  const creds = await guarded("model credentials", true, () => credentialsCheck(config, env, configOk));
  const git = await guarded("git", false, () => gitCheck(env));
  return [
    sandbox,
    landlock,
    seccomp,
    userns,
    bwrap,
    pty,
    homeResult,
    disk,
    cfg,
    creds,
    executor,
    containment,
    codeMode,
    git,
  ];
}

/**
 * `relay doctor`: whether this host can run relay sessions, one check at a time, each with what
 * to do when it fails. Nothing here prints: the CLI renders the checks (or prints them as JSON).
 * A check is `required` when `relay run` with the current config cannot work without it; the
 * doctor passes when every required check is `ok`.
 */
import { spawnSync } from "node:child_process";
import { mkdir, stat, statfs, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { resolveHostProgram } from "../codemode/host/program.ts";
import {
  applyOverrides,
  type ConfigOverrides,
  defaultConfig,
  type LoadedConfig,
  loadConfig,
  type RelayConfig,
} from "../config/config.ts";
import { CodeModeMethods } from "../contracts/code-mode.ts";
import { ExecutorMethods } from "../contracts/executor.ts";
import {
  type BwrapSupport,
  type LandlockSupport,
  prepareSandbox,
  probeBwrap,
  probeLandlock,
  probeSandbox,
  probeUserns,
  type SandboxSupport,
} from "../executor/sandbox/index.ts";
import { ptySupported, spawnProcess } from "../executor/spawn/index.ts";
import { configPath } from "../home/home.ts";
import { credentialState, effectiveBaseUrl, showUrl } from "../policy/preflight.ts";
import { sessionSandboxPolicy } from "../policy/sandbox-check.ts";
import { type ChildPeer, spawnPeer, spawnSelf } from "../protocol/child.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { randomUUID } from "../util/random.ts";
import { errorMessage, type Result } from "../util/result.ts";

export const DoctorStatusSchema = lazySchema(() => z.enum(["ok", "missing", "warn"]));
export type DoctorStatus = z.infer<typeof DoctorStatusSchema>;

export const DoctorCheckSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    status: DoctorStatusSchema,
    /** What was found; never a secret's value. */
    detail: z.string(),
    /** What to do about a status other than ok. */
    fix: z.string().optional(),
    /** `relay run` with the current config cannot work unless this is ok. */
    required: z.boolean(),
  }),
);
export type DoctorCheck = z.infer<typeof DoctorCheckSchema>;

/** What `relay doctor --json` prints. */
export const DoctorReportSchema = lazySchema(() =>
  z.object({
    checks: z.array(DoctorCheckSchema),
    /** Every required check is ok. */
    ok: z.boolean(),
  }),
);
export type DoctorReport = z.infer<typeof DoctorReportSchema>;

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

export function doctorPassed(checks: readonly DoctorCheck[]): boolean {
  return checks.every((c) => !c.required || c.status === "ok");
}

export function doctorReport(checks: DoctorCheck[]): DoctorReport {
  return DoctorReportSchema.parse({ checks, ok: doctorPassed(checks) });
}

const SANDBOX_CHOICES =
  "run on a kernel with Landlock ABI 3+ (Linux 6.2+); or install bubblewrap (apt-get install bubblewrap); " +
  "or accept weaker enforcement with --sandbox-best-effort (config: [sandbox] best_effort = true); " +
  'or run without a sandbox with --sandbox danger-full-access (config: sandbox_mode = "danger-full-access")';

const notLinux = () =>
  `not Linux (${process.platform})${process.platform === "darwin" ? ": the sandbox uses Seatbelt here" : ""}`;

function check(name: string, status: DoctorStatus, detail: string, required: boolean, fix?: string): DoctorCheck {
  return fix !== undefined && status !== "ok"
    ? { name, status, detail, fix, required }
    : { name, status, detail, required };
}

/** Runs `fn`; an exception becomes a `missing` check instead of ending the doctor. */
async function guarded(
  name: string,
  required: boolean,
  fn: () => DoctorCheck | Promise<DoctorCheck>,
): Promise<DoctorCheck> {
  try {
    return await fn();
  } catch (e) {
    return check(name, "missing", `the check itself failed: ${errorMessage(e)}`, required);
  }
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

// ---- sandbox ----------------------------------------------------------------------------------

function sandboxCheck(support: SandboxSupport, config: RelayConfig): DoctorCheck {
  const name = "sandbox";
  const mode = config.sandbox_mode;
  const needed = mode !== "danger-full-access";
  const forced = config.sandbox.mechanism;
  const linux = process.platform === "linux";
  const note = needed ? "" : ` (not needed: sandbox_mode = ${mode})`;
  // A mechanism forced in config.toml is the one `relay run` will use, whatever auto would pick.
  if (linux && forced === "landlock" && support.landlock) {
    const l = support.landlock;
    if (l.abi >= 3 && l.seccomp)
      return check(name, "ok", `landlock (sandbox.mechanism = landlock): ${l.detail}, seccomp${note}`, needed);
    return bestEffortOr(
      name,
      support,
      config,
      `sandbox.mechanism = landlock, but ${l.detail}${l.seccomp ? "" : ", no seccomp"}${note}`,
      needed,
    );
  }
  if (linux && forced === "bwrap") {
    const b = support.bwrap ?? probeBwrap();
    if (b.works) return check(name, "ok", `bubblewrap (sandbox.mechanism = bwrap): ${b.detail}${note}`, needed);
    return check(
      name,
      "missing",
      `sandbox.mechanism = bwrap, but ${b.detail}${note}`,
      needed,
      'install bubblewrap (apt-get install bubblewrap); or set [sandbox] mechanism = "auto" to use the built-in sandbox; or run without a sandbox with --sandbox danger-full-access',
    );
  }
  if (support.available) {
    const shown = support.detail.startsWith("built-in: ")
      ? `${support.mechanism} (built-in): ${support.detail.slice("built-in: ".length)}`
      : `${support.mechanism}: ${support.detail}`;
    return check(name, "ok", shown + note, needed);
  }
  return bestEffortOr(name, support, config, `no mechanism can enforce ${mode} here: ${support.detail}${note}`, needed);
}

/**
 * The executor's own decision for a command in `cwd`, which the probes alone cannot make (a git
 * workspace needs user namespaces to keep .git read-only, say): a refusal there turns an ok into
 * missing with the executor's reason, and best-effort gaps are named.
 */
async function workspaceVerdict(
  probed: DoctorCheck,
  config: RelayConfig,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<DoctorCheck> {
  if (config.sandbox_mode === "danger-full-access" || probed.status === "missing") return probed;
  const attempt = await prepareSandbox(["true"], sessionSandboxPolicy(config, cwd), {
    cwd,
    tty: false,
    env: stringEnv(env),
  });
  if ("error" in attempt)
    return check(
      probed.name,
      "missing",
      `commands in ${cwd} would be refused: ${attempt.error.message}`,
      probed.required,
      SANDBOX_CHOICES,
    );
  if (attempt.ok.gaps.length > 0)
    return check(
      probed.name,
      "warn",
      `${probed.detail}; in ${cwd}, not enforced: ${attempt.ok.gaps.join("; ")}`,
      false,
    );
  return probed;
}

/** With `[sandbox] best_effort = true` the built-in sandbox runs with what the kernel has. */
function bestEffortOr(
  name: string,
  support: SandboxSupport,
  config: RelayConfig,
  detail: string,
  needed: boolean,
): DoctorCheck {
  if (needed && config.sandbox.best_effort && support.landlock?.native && config.sandbox.mechanism !== "bwrap") {
    return check(
      name,
      "warn",
      `best effort (sandbox.best_effort = true): commands run with weaker enforcement; ${detail}`,
      false,
      "for full enforcement: a kernel with Landlock ABI 3+ (Linux 6.2+), or bubblewrap (apt-get install bubblewrap)",
    );
  }
  return check(name, "missing", detail, needed, SANDBOX_CHOICES);
}

function landlockCheck(l: LandlockSupport | undefined): DoctorCheck {
  const name = "landlock";
  if (process.platform !== "linux" || !l) return check(name, "warn", notLinux(), false);
  if (!l.native)
    return check(
      name,
      "missing",
      `the built-in sandbox cannot load: ${l.detail}`,
      false,
      "run the relay binary (or relay under bun), or use bubblewrap",
    );
  // The probe's detail also mentions seccomp, which has its own line.
  const abi = l.detail.split("; ")[0]!;
  if (l.abi >= 3) return check(name, "ok", abi, false);
  const fix =
    "upgrade to a kernel with Landlock ABI 3+ (Linux 6.2+, landlock in the lsm= boot parameter); meanwhile bubblewrap or --sandbox-best-effort";
  if (l.abi >= 1)
    return check(
      name,
      "warn",
      `${abi}: the built-in sandbox needs ABI 3 (Linux 6.2+) to control truncation; best effort only`,
      false,
      fix,
    );
  return check(name, "missing", `${abi}: the built-in sandbox needs Landlock ABI 3+ (Linux 6.2+)`, false, fix);
}

function seccompCheck(l: LandlockSupport | undefined): DoctorCheck {
  const name = "seccomp";
  if (process.platform !== "linux" || !l) return check(name, "warn", notLinux(), false);
  if (!l.native) return check(name, "missing", `not probed: ${l.detail}`, false);
  if (l.seccomp) return check(name, "ok", "seccomp filters work (they turn the network off inside the sandbox)", false);
  const simulated = (process.env.RELAY_SANDBOX_SIMULATE ?? "").includes("no-seccomp")
    ? " (simulated by RELAY_SANDBOX_SIMULATE)"
    : "";
  return check(
    name,
    "missing",
    `seccomp filters are unavailable${simulated}: the built-in sandbox cannot turn the network off`,
    false,
    "a kernel with CONFIG_SECCOMP_FILTER, or bubblewrap",
  );
}

async function usernsCheck(): Promise<DoctorCheck> {
  const name = "user namespaces";
  if (process.platform !== "linux") return check(name, "warn", notLinux(), false);
  const u = await probeUserns();
  const why = "needed to keep .git and .relay read-only inside a writable workspace";
  if (u.ok) return check(name, "ok", `${u.detail} (${why})`, false);
  return check(
    name,
    "missing",
    `${u.detail}; ${why}: without them git workspaces need bubblewrap or --sandbox-best-effort`,
    false,
    "allow unprivileged user namespaces (see detail), or install bubblewrap",
  );
}

function bwrapCheck(b: BwrapSupport | undefined): DoctorCheck {
  const name = "bubblewrap";
  if (process.platform !== "linux") return check(name, "warn", notLinux(), false);
  const r = b ?? probeBwrap();
  if (r.works) return check(name, "ok", r.detail, false);
  if (!r.program && /not installed/.test(r.detail))
    return check(name, "warn", "optional, not installed (apt-get install bubblewrap)", false);
  return check(name, "warn", `optional: ${r.detail}`, false);
}

// ---- pty ----------------------------------------------------------------------------------------

async function ptyCheck(env: NodeJS.ProcessEnv): Promise<DoctorCheck> {
  const name = "pty";
  const fix = "run the compiled relay binary (or relay under bun); tty=true commands are refused without a PTY";
  if (!ptySupported()) return check(name, "missing", "this runtime has no PTY support", true, fix);
  const started = spawnProcess({
    argv: ["sh", "-c", "printf ok"],
    cwd: os.tmpdir(),
    env: { TERM: "dumb", ...stringEnv(env) },
    tty: true,
  });
  if ("error" in started) return check(name, "missing", started.error.message, true, fix);
  const proc = started.ok;
  let output = "";
  let sawOk!: () => void;
  const gotOk = new Promise<void>((r) => (sawOk = r));
  proc.onData((chunk) => {
    output += Buffer.from(chunk).toString("utf8");
    if (output.includes("ok")) sawOk();
  });
  const exit = await proc.exited;
  // The last bytes may be delivered after the exit status: wait until the terminal closed.
  await Promise.race([gotOk, proc.outputClosed]);
  if (exit.code !== 0)
    return check(
      name,
      "missing",
      `a test command on a PTY exited with ${exit.code}${exit.signal ? ` (${exit.signal})` : ""}`,
      true,
      fix,
    );
  if (!output.includes("ok"))
    return check(
      name,
      "missing",
      `a test command on a PTY printed ${JSON.stringify(output.slice(0, 200))} instead of "ok"`,
      true,
      fix,
    );
  return check(name, "ok", `a test command ran on a PTY (pid ${proc.pid})`, true);
}

// ---- relay home and config ---------------------------------------------------------------------

async function homeCheck(home: string): Promise<DoctorCheck> {
  const name = "relay home";
  const fix = `set RELAY_HOME to a writable directory, or make ${home} one (mkdir -p / chmod u+w)`;
  let created = false;
  try {
    const s = await stat(home);
    if (!s.isDirectory()) return check(name, "missing", `${home} exists but is not a directory`, true, fix);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT")
      return check(name, "missing", `cannot inspect ${home}: ${errorMessage(e)}`, true, fix);
    try {
      await mkdir(home, { recursive: true });
      created = true;
    } catch (e2) {
      return check(name, "missing", `${home} does not exist and cannot be created: ${errorMessage(e2)}`, true, fix);
    }
  }
  const probe = path.join(home, `.doctor-${process.pid}-${randomUUID().slice(0, 8)}`);
  try {
    await writeFile(probe, "", { flag: "wx" });
    await unlink(probe);
  } catch (e) {
    return check(name, "missing", `${home} is not writable: ${errorMessage(e)}`, true, fix);
  }
  return check(
    name,
    "ok",
    created ? `${home} (it did not exist: created it now, as relay run would)` : `${home} (writable)`,
    true,
  );
}

/** Below these, sessions and runs may soon fail to record (a warning); at zero they cannot (missing). */
export const LOW_SPACE_BYTES = 256 * 1024 * 1024;
export const LOW_INODES = 10_000;

/** Free space and inodes on the home's file system: a full disk stops sessions mid-way. */
export async function diskCheck(home: string): Promise<DoctorCheck> {
  const name = "disk space";
  const fix = `free space on the file system holding ${home}, or set RELAY_HOME to a directory on another one`;
  let fs: Awaited<ReturnType<typeof statfs>>;
  try {
    fs = await statfs(home);
  } catch (e) {
    return check(name, "warn", `cannot read the free space of ${home}: ${errorMessage(e)}`, false);
  }
  const bytes = fs.bavail * fs.bsize;
  // A file system without inode counts (btrfs, some network ones) reports files = 0.
  const inodes = fs.files > 0 ? fs.ffree : undefined;
  const detail = `${formatFree(bytes)} and ${inodes === undefined ? "no inode count" : `${inodes} inodes`} free for ${home}`;
  if (bytes < 1024 * 1024 || inodes === 0) return check(name, "missing", detail, true, fix);
  if (bytes < LOW_SPACE_BYTES || (inodes !== undefined && inodes < LOW_INODES))
    return check(name, "warn", `${detail}: little left`, false, fix);
  return check(name, "ok", detail, false);
}

function formatFree(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${Math.floor(bytes / 1024)} KiB`;
}

function configCheck(home: string, loaded: Result<LoadedConfig>): DoctorCheck {
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

function credentialsCheck(config: RelayConfig, env: NodeJS.ProcessEnv, configOk: boolean): DoctorCheck {
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

// ---- children: executor and code-mode host ----------------------------------------------------

async function withChild<T>(
  child: Result<ChildPeer>,
  use: (c: ChildPeer) => Promise<T>,
): Promise<T | { error: string }> {
  if ("error" in child) return { error: child.error.message };
  try {
    return await use(child.ok);
  } finally {
    await child.ok.shutdown();
  }
}

/** The local executor's line, and the process-containment line from what it reports. */
async function executorChecks(
  env: NodeJS.ProcessEnv,
  config: RelayConfig,
  timeoutMs: number,
): Promise<[DoctorCheck, DoctorCheck]> {
  const name = "executor";
  const remote = config.executor
    ? `; config executor = ${JSON.stringify(config.executor)} is not started here (relay executor --check --executor '...' checks it)`
    : "";
  const r = await withChild(spawnSelf("executor", [], { name: "executor", env }), async (c) => {
    const info = await c.peer.call(ExecutorMethods.info, {}, { timeoutMs });
    return "error" in info ? { error: info.error.message } : info.ok;
  });
  if ("error" in r) {
    const why = `relay executor did not answer executor/info: ${r.error}${remote}`;
    return [
      check(
        name,
        "missing",
        why,
        true,
        "run relay executor --check for details; set RELAY_SELF_COMMAND if relay cannot re-run itself",
      ),
      check("containment", "warn", `not known: ${why}`, false),
    ];
  }
  const executor = check(
    name,
    "ok",
    `relay ${r.version} (${r.runtime}, ${r.platform}/${r.arch}, pid ${r.pid})${remote}`,
    true,
  );
  const c = r.sandbox.containment;
  if (!c) return [executor, check("containment", "warn", "this executor does not report it", false)];
  return [
    executor,
    c.enforced ? check("containment", "ok", c.detail, false) : check("containment", "warn", c.detail, false),
  ];
}

async function codeModeCheck(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorCheck> {
  const name = "code-mode host";
  const program = resolveHostProgram(env);
  const which =
    program.kind === "path"
      ? `${program.path} (from ${program.source === "env" ? "RELAY_CODE_MODE_HOST_PATH" : program.source === "sibling" ? "next to relay" : "PATH"})`
      : "relay code-mode-host";
  const child =
    program.kind === "path"
      ? spawnPeer([program.path], { name: "code-mode-host", env })
      : spawnSelf("code-mode-host", [], { name: "code-mode-host", env });
  const r = await withChild(child, async (c) => {
    const hello = await c.peer.call(CodeModeMethods.hello, {}, { timeoutMs });
    return "error" in hello ? { error: hello.error.message } : hello.ok;
  });
  if ("error" in r)
    return check(
      name,
      "missing",
      `${which} did not answer codemode/hello: ${r.error}`,
      true,
      "relay run --code-mode needs it; check RELAY_CODE_MODE_HOST_PATH or the relay install",
    );
  return check(name, "ok", `${which}: QuickJS loaded (pid ${r.pid})`, true);
}

// ---- git ----------------------------------------------------------------------------------------

function gitCheck(env: NodeJS.ProcessEnv): DoctorCheck {
  const name = "git";
  const r = spawnSync("git", ["--version"], { env, encoding: "utf8", timeout: 10_000 });
  if (r.status === 0) return check(name, "ok", r.stdout.trim(), false);
  const why = r.error
    ? (r.error as NodeJS.ErrnoException).code === "ENOENT"
      ? "not found on PATH"
      : r.error.message
    : `git --version exited ${r.status}`;
  return check(name, "warn", `${why}: memories' baseline and git-aware tools need it`, false, "install git");
}

// ---- all of them --------------------------------------------------------------------------------

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

/**
 * The hidden helper mode: `relay __sandbox-exec <plan-json> -- CMD ARGS…`. The executor runs
 * each sandboxed command through it; it confines itself as planned and execs the command,
 * which keeps this process's pid, environment, cwd, stdio (pipes or PTY) and exit status.
 */
import type { ConfinePlan } from "./plan-schema.ts";
import { describeNativeError, loadNative, spawnConfined } from "./confine-cc.ts";
import { confineInPlace, Stage, type ConfineFailure, type ExecTarget } from "./confine-ffi.ts";
import { loadLibc } from "./libc.ts";
import { simulated } from "./support.ts";
import { SANDBOX_EXEC_ARG } from "./helper-arg.ts";
import { parsePlan } from "./plan-guard.ts";
import { resolveProgram } from "./which.ts";


/** Shell conventions: 126 found but cannot run, 127 not found. */
const EXIT_CANNOT_RUN = 126;
const EXIT_NOT_FOUND = 127;

function die(message: string, code: number): never {
  process.stderr.write(`relay sandbox: ${message}\n`);
  process.exit(code);
}

function commandEnv(plan: ConfinePlan): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const [name, value] of Object.entries(plan.restoreEnv ?? {})) {
    if (value === null) delete env[name];
    else env[name] = value;
  }
  return env;
}

function report(argv0: string, failure: ConfineFailure): never {
  const text = describeNativeError(-(failure.stage * 1000 + failure.errno)).text;
  if (failure.stage === Stage.Execve) die(`${argv0}: cannot run: ${text}`, failure.errno === 2 ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  die(`could not apply the sandbox (${text}); the command was not run`, EXIT_CANNOT_RUN);
}

/** A threaded process cannot unshare in place: a forked child does it (confine.c). */
async function viaFork(plan: ConfinePlan, target: ExecTarget): Promise<never> {
  const native = await loadNative();
  if ("error" in native) die(`${native.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  const r = spawnConfined(native.ok, plan, target);
  if (r >= 0) process.exit(r);
  const e = describeNativeError(r);
  return report(target.argv[0] ?? "", { stage: e.stage, errno: e.errno });
}

/** Confines this process per `plan` and runs `argv`; returns only by exiting. */
export async function execConfined(plan: ConfinePlan, argv: string[]): Promise<never> {
  const libc = await loadLibc();
  if ("error" in libc) die(`${libc.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  const env = commandEnv(plan);
  const file = resolveProgram(argv[0] ?? "", env.PATH, process.cwd());
  if ("error" in file) die(file.error.message, EXIT_NOT_FOUND);
  const target: ExecTarget = { file: file.ok, argv, env };
  const failure = simulated().threaded && plan.readOnly.length > 0 ? { stage: Stage.Unshare, errno: 22, threaded: true } : confineInPlace(libc.ok, plan, target);
  if (failure.threaded) return viaFork(plan, target);
  return report(argv[0] ?? "", failure);
}

/** Entry for the hidden mode; `args` follow SANDBOX_EXEC_ARG. */
export async function sandboxExecMain(args: string[]): Promise<never> {
  const sep = args.indexOf("--");
  if (sep !== 1 || args.length < 3) die(`usage: relay ${SANDBOX_EXEC_ARG} <plan-json> -- CMD [ARGS...] (internal; see relay sandbox --help)`, 2);
  const plan = parsePlan(args[0]!);
  if ("problem" in plan) die(plan.problem, 2);
  return execConfined(plan.ok, args.slice(2));
}

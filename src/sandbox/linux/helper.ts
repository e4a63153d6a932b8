/**
 * The hidden helper mode: `relay __sandbox-exec <plan-json> -- CMD ARGS…`, or `--wait` for a
 * warm helper that reads its command from stdin. The executor runs each sandboxed command
 * through it; it confines itself as planned and execs the command, which keeps this process's
 * pid, environment, cwd, stdio (pipes or PTY) and exit status.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { resolveProgram } from "../../util/which.ts";
import { type ContainerFds, loadNative, spawnConfined } from "./confine-cc.ts";
import { confineInPlace } from "./confine-ffi.ts";
import { CONTAINER_INIT_FLAG, openContainer } from "./container.ts";
import { SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG } from "./helper-arg.ts";
import { containerInitMain } from "./init-loop.ts";
import { CArgs, type Ffi, type Libc, loadLibc } from "./libc.ts";
import { parsePlan, parseWarmRequest } from "./plan-guard.ts";
import type { ConfinePlan, ExecTarget } from "./plan-schema.ts";
import { type ConfineFailure, decodeNativeError, describeFailure, Stage } from "./stages.ts";
import { simulated } from "./support.ts";

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
  const text = describeFailure(failure);
  if (failure.stage === Stage.Execve)
    die(`${argv0}: cannot run: ${text}`, failure.errno === 2 ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  die(`could not apply the sandbox (${text}); the command was not run`, EXIT_CANNOT_RUN);
}

/** A threaded process cannot unshare in place: a forked child does it (confine.c). */
async function viaFork(libc: Libc, ffi: Ffi, plan: ConfinePlan, target: ExecTarget): Promise<never> {
  const native = await loadNative();
  if ("error" in native) die(`${native.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  let container: ContainerFds | undefined;
  try {
    container = plan.container ? openContainer(libc, new CArgs(ffi), plan.container) : undefined;
  } catch (e) {
    return report(target.argv[0] ?? "", e as ConfineFailure);
  }
  const r = spawnConfined(native.ok, plan, target, container);
  if (r >= 0) process.exit(r);
  return report(target.argv[0] ?? "", decodeNativeError(r));
}

interface Job {
  plan: ConfinePlan;
  argv: string[];
  env: Record<string, string | undefined>;
  /** Act as if threaded (RELAY_SANDBOX_SIMULATE=threaded), to test the forking path. */
  threaded: boolean;
}

async function runJob(job: Job): Promise<never> {
  const libc = await loadLibc();
  if ("error" in libc) die(`${libc.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  const file = resolveProgram(job.argv[0] ?? "", job.env.PATH, process.cwd());
  if ("error" in file) die(file.error.message, EXIT_NOT_FOUND);
  const target: ExecTarget = { file: file.ok, argv: job.argv, env: job.env };
  const threaded = job.threaded && (job.plan.readOnly.length > 0 || job.plan.hide.length > 0);
  const failure = threaded
    ? { stage: Stage.Unshare, errno: 22, threaded: true }
    : confineInPlace(libc.ok, job.plan, target);
  if (failure.threaded) return viaFork(libc.ok.libc, libc.ok.ffi, job.plan, target);
  return report(job.argv[0] ?? "", failure);
}

/** Confines this process per `plan` and runs `argv`; returns only by exiting. */
export async function execConfined(plan: ConfinePlan, argv: string[]): Promise<never> {
  return runJob({ plan, argv, env: commandEnv(plan), threaded: simulated().threaded });
}

/** One line from stdin: the request ends at its newline (closing the pipe can lag by milliseconds). */
function readRequestLine(): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(64 * 1024);
  for (;;) {
    const n = readSync(0, buf, 0, buf.length, null);
    if (n === 0) return Buffer.concat(chunks).toString("utf8");
    const chunk = Buffer.from(buf.subarray(0, n));
    chunks.push(chunk);
    if (chunk.includes(0x0a)) return Buffer.concat(chunks).toString("utf8").split("\n", 1)[0]!;
  }
}

/**
 * `--wait`: a warm helper. Loads what it needs while idle, then blocks until the executor sends
 * the command; stdin becomes /dev/null, as for any pipe-mode command, before it runs.
 */
async function warmMain(): Promise<never> {
  const libc = await loadLibc();
  if ("error" in libc) die(`${libc.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  const req = parseWarmRequest(readRequestLine());
  if ("problem" in req) die(req.problem, 2);
  const devNull = openSync("/dev/null", "r");
  libc.ok.libc.dup2(devNull, 0);
  closeSync(devNull);
  try {
    process.chdir(req.ok.cwd);
  } catch (e) {
    die(`cannot run in ${req.ok.cwd}: ${(e as Error).message}`, EXIT_CANNOT_RUN);
  }
  return runJob({ plan: req.ok.plan, argv: req.ok.argv, env: req.ok.env, threaded: simulated(req.ok.env).threaded });
}

const PR_SET_PDEATHSIG = 1;
const SIGKILL = 9;

/** A helper whose executor is gone has no one to report to: it (and an exec'd command) dies too. */
async function dieWithParent(): Promise<void> {
  const libc = await loadLibc();
  if ("ok" in libc) libc.ok.libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}

/** Entry for the hidden mode; `args` follow SANDBOX_EXEC_ARG. */
export async function sandboxExecMain(args: string[]): Promise<never> {
  if (args.length === 1 && args[0] === CONTAINER_INIT_FLAG) return containerInitMain();
  await dieWithParent();
  if (args.length === 1 && args[0] === SANDBOX_WAIT_FLAG) return warmMain();
  const sep = args.indexOf("--");
  if (sep !== 1 || args.length < 3)
    die(
      `usage: relay ${SANDBOX_EXEC_ARG} <plan-json> -- CMD [ARGS...] | ${SANDBOX_WAIT_FLAG} (internal; see relay sandbox --help)`,
      2,
    );
  const plan = parsePlan(args[0]!);
  if ("problem" in plan) die(plan.problem, 2);
  return execConfined(plan.ok, args.slice(2));
}

/**
 * The hidden helper mode: `relay __sandbox-exec <plan-json> -- CMD ARGS…`. The executor runs
 * each sandboxed command through it; it confines itself as planned and execs the command,
 * which keeps this process's pid, environment, cwd, stdio (pipes or PTY) and exit status.
 */
import { parseJsonWith } from "../../../util/json.ts";
import type { ConfinePlan } from "./landlock-plan.ts";
import { confineAndExec, describeNativeError, loadNative } from "./native.ts";
import { SANDBOX_EXEC_ARG } from "./helper-arg.ts";
import { ConfinePlanSchema } from "./plan-schema.ts";
import { resolveProgram } from "./which.ts";


/** Shell conventions: 126 found but cannot run, 127 not found. */
const EXIT_CANNOT_RUN = 126;
const EXIT_NOT_FOUND = 127;

function die(message: string, code: number): never {
  process.stderr.write(`relay sandbox: ${message}\n`);
  process.exit(code);
}

/** Confines this process per `plan` and runs `argv`; returns only by exiting. */
export async function execConfined(plan: ConfinePlan, argv: string[]): Promise<never> {
  const native = await loadNative();
  if ("error" in native) die(`${native.error.message}; the command was not run`, EXIT_CANNOT_RUN);
  const file = resolveProgram(argv[0] ?? "", process.env.PATH, process.cwd());
  if ("error" in file) die(file.error.message, EXIT_NOT_FOUND);
  const r = confineAndExec(native.ok, plan, { file: file.ok, argv, env: process.env });
  if (r >= 0) process.exit(r);
  const e = describeNativeError(r);
  if (e.stage === 7) die(`${argv[0]}: cannot run: ${e.text}`, e.errno === 2 ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  die(`could not apply the sandbox (${e.text}); the command was not run`, EXIT_CANNOT_RUN);
}

/** Entry for the hidden mode; `args` follow SANDBOX_EXEC_ARG. */
export async function sandboxExecMain(args: string[]): Promise<never> {
  const sep = args.indexOf("--");
  if (sep !== 1 || args.length < 3) die(`usage: relay ${SANDBOX_EXEC_ARG} <plan-json> -- CMD [ARGS...] (internal; see relay sandbox --help)`, 2);
  const plan = parseJsonWith(ConfinePlanSchema, args[0]!, "sandbox plan");
  if ("error" in plan) die(plan.error.message, 2);
  return execConfined(plan.ok, args.slice(2));
}

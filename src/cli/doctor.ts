/** `relay doctor`: can this host run relay sessions? One line per check, with the fix for each. */
import path from "node:path";
import { Command, Option } from "@commander-js/extra-typings";
import { applyOverrides, defaultConfig } from "../config/config.ts";
import { type DoctorCheck, doctorReport } from "../doctor/check.ts";
import { runDoctorChecks } from "../doctor/doctor.ts";
import { relayHome } from "../home/home.ts";
import { MODEL_PROVIDERS } from "../model/factory.ts";
import { checkWorkingDir } from "../policy/preflight.ts";
import { Log } from "../util/log.ts";
import { ExitCode } from "./usage.ts";

const STATUS_WIDTH = "missing".length + 2;

/** Aligned lines: status, name, detail; an indented `fix:` under each line that is not ok. */
export function renderDoctorChecks(checks: readonly DoctorCheck[]): string {
  const nameWidth = Math.max(...checks.map((c) => c.name.length)) + 2;
  const indent = " ".repeat(STATUS_WIDTH + nameWidth);
  const lines: string[] = [];
  for (const c of checks) {
    const [first = "", ...rest] = c.detail.split("\n");
    const optional = c.status !== "ok" && !c.required && !first.includes("optional") ? " (optional)" : "";
    lines.push(`${c.status.padEnd(STATUS_WIDTH)}${c.name.padEnd(nameWidth)}${first}${optional}`);
    for (const more of rest) lines.push(`${indent}${more}`);
    if (c.status !== "ok" && c.fix) lines.push(`${indent}fix: ${c.fix}`);
  }
  const failed = checks.filter((c) => c.required && c.status !== "ok");
  const warnings = checks.filter((c) => c.status !== "ok" && !c.required).length;
  const note = warnings ? ` (${warnings} optional check(s) not ok)` : "";
  lines.push(
    failed.length === 0
      ? `all required checks passed${note}`
      : `${failed.length} required check(s) failed: ${failed.map((c) => c.name).join(", ")}${note}`,
  );
  return lines.join("\n") + "\n";
}

/** Where this relay logs (after the home check, which may have just created RELAY_HOME). */
export function logCheck(): DoctorCheck {
  const name = "logs";
  const file = Log.fileStatus();
  if (!file) return { name, status: "warn", detail: "no log file is configured", required: false };
  if (file.writing) return { name, status: "ok", detail: file.path, required: false };
  const fix = `make ${path.dirname(file.path)} writable, or set RELAY_HOME to a writable directory; relay runs on without a log file`;
  return { name, status: "warn", detail: `${file.path} cannot be written (${file.problem})`, fix, required: false };
}

export function doctorCommand() {
  return new Command("doctor")
    .description(
      "check that this host can run relay: sandbox, PTY, RELAY_HOME, config, model credentials, executor and code-mode host",
    )
    .option("--json", "print one JSON object {checks: [{name, status, detail, fix?, required}], ok} instead of lines")
    .option("-C, --cd <dir>", "the workspace to check the sandbox for (default: the current directory)")
    .option("-m, --model <name>", "as relay run: the model a session would use (config: model)")
    .addOption(
      new Option("--provider <provider>", "as relay run: the model API (config: model_provider)").choices(
        MODEL_PROVIDERS,
      ),
    )
    .option(
      "--base-url <url>",
      "as relay run: the API base URL, e.g. http://localhost:11434/v1 (config: base_url; env OPENAI_BASE_URL)",
    )
    .option("--api-key-env <name>", "as relay run: the variable that holds the API key (config: api_key_env)")
    .addHelpText(
      "after",
      `
Each check is ok, missing or warn, and says how to fix what is not ok. Checks, in order:
  sandbox            a mechanism that can enforce sandbox_mode for a command in the workspace
                     (-C, default the current directory); required unless danger-full-access
  landlock, seccomp  what the kernel offers the built-in sandbox (Landlock ABI 3+ = Linux 6.2+)
  user namespaces    keep .git and .relay read-only inside a writable workspace
  bubblewrap         the optional fallback sandbox (bwrap)
  pty                a test command on a PTY (tty=true commands need it)
  relay home         $RELAY_HOME (default ~/.relay) exists, or is created, and is writable
  disk space         free space and inodes there: warn under 256 MiB or 10,000 inodes, missing
                     under 1 MiB or with no inode left (a full disk stops a session mid-way)
  config             $RELAY_HOME/config.toml parses (errors name file:line)
  model credentials  what a session would use: the API key variable (api_key_env, default
                     OPENAI_API_KEY) is set; its value is never printed. The scripted provider
                     and servers on this machine or a private network need none, as for run.
                     --provider, --base-url, -m and --api-key-env check what run would with
                     the same flags.
  executor           relay executor starts and answers executor/info
  code-mode host     relay code-mode-host starts and answers codemode/hello
  git                git on PATH (optional)
  logs               the log file, $RELAY_HOME/logs/relay.log (optional: relay runs without it)

RELAY_SANDBOX_SIMULATE (comma separated: landlock-abi=N, no-userns, no-seccomp) makes the
probes report a weaker kernel, to see what relay would do there.

Exit codes: 0 every required check is ok; 1 a required check is not ok; 2 bad usage.`,
    )
    .action(async (opts) => {
      const dir = checkWorkingDir(opts.cd);
      if ("error" in dir) {
        process.stderr.write(`relay: ${dir.error.message}\n`);
        process.exit(ExitCode.Usage);
      }
      const overrides = {
        model: opts.model,
        provider: opts.provider,
        base_url: opts.baseUrl,
        api_key_env: opts.apiKeyEnv,
      };
      const valid = applyOverrides(defaultConfig(), overrides);
      if ("error" in valid) {
        process.stderr.write(`relay: ${valid.error.message}\n`);
        process.exit(ExitCode.Usage);
      }
      const checks = [
        ...(await runDoctorChecks({
          home: relayHome(),
          env: process.env,
          overrides,
          ...(opts.cd ? { cwd: path.resolve(opts.cd) } : {}),
        })),
        logCheck(),
      ];
      const report = doctorReport(checks);
      process.stdout.write(opts.json ? JSON.stringify(report) + "\n" : renderDoctorChecks(checks));
      process.exit(report.ok ? ExitCode.Ok : ExitCode.Failure);
    });
}

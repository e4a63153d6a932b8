/**
 * Runs the user's `git` for a run on a repository. The orchestrator runs it on trees a model
 * wrote, so every call is made safe first: no hooks, no fsmonitor, no signing prompts, no
 * pager, no terminal prompts, and no GIT_* variable of the caller's environment (GIT_DIR or
 * GIT_INDEX_FILE would point the command at another repository or index). The repository's
 * own config still applies: the model cannot write it (`.git` is read-only to every role).
 */
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { err, ok, type Result } from "../../util/result.ts";

/** Options that make git safe to run on a tree the orchestrator does not trust. */
const SAFE_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "commit.gpgsign=false",
  "-c",
  "tag.gpgsign=false",
  "-c",
  "core.pager=cat",
  "-c",
  "advice.detachedHead=false",
];

/** The identity of the commits the orchestrator makes. */
export const INFTY_AUTHOR = { name: "relay infty", email: "infty@relay.invalid" };

export interface GitOptions {
  /** Where git runs (`git -C`). */
  cwd: string;
  /** More environment (e.g. GIT_INDEX_FILE for a temporary index). */
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (e.g. 1 for `diff --quiet`). */
  okCodes?: number[];
  /** Commit as the user (their configured identity), not as "relay infty": `relay infty apply`'s merge. */
  asUser?: boolean;
}

export interface GitOutput {
  stdout: string;
  code: number;
}

/** The caller's environment without GIT_* (and, unless `asUser`, with the orchestrator's identity for commits). */
function gitEnv(extra: Record<string, string> = {}, asUser = false): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("GIT_")) env[k] = v;
  const identity: Record<string, string> = asUser
    ? {}
    : {
        GIT_AUTHOR_NAME: INFTY_AUTHOR.name,
        GIT_AUTHOR_EMAIL: INFTY_AUTHOR.email,
        GIT_COMMITTER_NAME: INFTY_AUTHOR.name,
        GIT_COMMITTER_EMAIL: INFTY_AUTHOR.email,
      };
  return { ...env, GIT_TERMINAL_PROMPT: "0", ...identity, ...extra };
}

export const GIT_MISSING =
  'a run on a repository needs git, and no `git` program was found on PATH; install git, or run without a repository (relay infty run --no-repo "objective")';

/** Runs `git <args>` in `o.cwd`; an error value (with git's own message) unless it exits 0 or an `okCodes` code. */
export function git(args: string[], o: GitOptions): Promise<Result<GitOutput>> {
  return new Promise((resolve) => {
    const child = spawn("git", [...SAFE_CONFIG, "-C", o.cwd, ...args], {
      env: gitEnv(o.env, o.asUser),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const errs: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => errs.push(b));
    child.once("error", (e: NodeJS.ErrnoException) =>
      resolve(
        err(
          e.code === "ENOENT" ? "git_missing" : "git_failed",
          e.code === "ENOENT" ? GIT_MISSING : `git ${args[0]} could not start: ${e.message}`,
        ),
      ),
    );
    child.once("close", (code) => {
      const stdout = Buffer.concat(out).toString("utf8");
      const exit = code ?? 128;
      if (exit === 0 || o.okCodes?.includes(exit)) return resolve(ok({ stdout, code: exit }));
      const stderr = Buffer.concat(errs).toString("utf8").trim();
      resolve(
        err(
          "git_failed",
          `git ${args.join(" ")} failed in ${o.cwd} (exit ${exit}): ${stderr.split("\n").slice(-6).join("\n") || "(no message)"}`,
        ),
      );
    });
  });
}

/** `git` whose output is one line (a commit id, a path): trimmed. */
export async function gitLine(args: string[], o: GitOptions): Promise<Result<string>> {
  const r = await git(args, o);
  return "error" in r ? r : ok(r.ok.stdout.trim());
}

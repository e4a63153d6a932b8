/**
 * Where each role works and what its commands may write. Roles write only the Solver's
 * checkout and the model's part of the run store (artifacts/, memory/, deliverable/,
 * index/README.md); run.json, events.jsonl, the lease, the rest of index/ and .checkpoints.git
 * are the orchestrator's and stay read-only to every role (they are in no writable root, and
 * a writable root's `.git` is read-only by the sandbox's own rule). Verifiers judge a checkout
 * they cannot change.
 */
import path from "node:path";
import { roleKind } from "../config/infty/index.ts";
import { checkoutDir, type RepoRecord, reviewDir, shortCommit } from "./repo/record.ts";

/** The file of index/ that the Solver keeps; the rest of index/ is the orchestrator's. */
export const INDEX_README = path.join("index", "README.md");

/** The parts of the run store a model may write. */
export function modelOwnedPaths(runDir: string): string[] {
  return ["artifacts", "memory", "deliverable", INDEX_README].map((p) => path.join(runDir, p));
}

/**
 * What stays read-only to every role even where a writable place holds it (the orchestrator's
 * files, the records it appends to in memory/, the Verifiers' checkout): needed when the run
 * store lies under a temp dir or a writable root, harmless otherwise.
 */
/** The roles' rollouts, in the run store (written by the orchestrator's sessions, read-only to the roles' commands). */
export const ROLE_SESSIONS_DIR = "sessions";
export const roleSessionsDir = (runDir: string) => path.join(runDir, ROLE_SESSIONS_DIR);

export function orchestratorPaths(runDir: string): string[] {
  const own = [
    "run.json",
    "events.jsonl",
    "lease.json",
    "index/claims.json",
    "index/artifacts.json",
    "index/claims",
    "index/artifacts",
    ".checkpoints.git",
    "memory/notes.jsonl",
    "memory/verifications.jsonl",
    "memory/operator-notes.jsonl",
    "review",
    ROLE_SESSIONS_DIR,
  ];
  return own.map((p) => path.join(runDir, p));
}

export interface RoleWorkspace {
  cwd: string;
  /** Exactly what the role's commands may write under workspace-write (temp dirs aside). */
  writableRoots: string[];
  /** What stays read-only inside those (see orchestratorPaths). */
  readOnlyPaths: string[];
  /** Added to every command's environment. */
  env: Record<string, string>;
  /** What the role's prompt says about where things are. */
  where: string;
}

const storeParts = (runDir: string) =>
  `The run store is ${runDir} ($RELAY_RUN_STORE in your commands): artifacts/, memory/ and deliverable/ and the file index/README.md are yours to write; run.json, events.jsonl, lease.json, sessions/, the rest of index/ and .checkpoints.git are the orchestrator's and read-only to you.`;

function solverWhere(runDir: string, repo: RepoRecord | undefined): string {
  if (!repo) return `The current directory is the run store (${runDir}). ${storeParts(runDir)}`;
  return [
    `The current directory is your checkout of the repository ${repo.path}, on the run's own branch ${repo.branch} (started from ${shortCommit(repo.start_commit)}). Change the code here; the user's own checkout is never touched.`,
    `Do not commit, and do not switch branches: .git is read-only to you. The orchestrator commits this checkout to ${repo.branch} when you ask for verification and when you deliver, and the Verifiers judge a clean checkout of exactly that commit, so everything the work needs must be in the repository's files (not in ignored ones).`,
    storeParts(runDir),
    `Paths in claims and in a delivery are relative to the run store; in "evidence", name the commands that prove the claim (run from the repository's top, e.g. "npm test").`,
  ].join("\n");
}

function verifierWhere(runDir: string, repo: RepoRecord | undefined): string {
  if (!repo)
    return `The current directory is the run store (${runDir}); you may read everything and write nothing there (use a temp dir for scratch files).`;
  return `The current directory is a clean, read-only checkout of the repository ${repo.path} at the commit under review (each request names it); it holds exactly that commit. The run store, with the claims and the deliverable's README, is ${runDir} ($RELAY_RUN_STORE). Write scratch files in a temp dir ($TMPDIR or /tmp) only.`;
}

export function roleWorkspace(role: string, runDir: string, repo: RepoRecord | undefined): RoleWorkspace {
  // The repository's git directory holds the run's branch and the worktrees' HEADs: only the orchestrator commits.
  const common = {
    env: { RELAY_RUN_STORE: runDir },
    readOnlyPaths: [...orchestratorPaths(runDir), ...(repo ? [repo.git_dir] : [])],
  };
  const kind = roleKind(role);
  if (kind === "verifier")
    return { ...common, cwd: repo ? reviewDir(runDir) : runDir, writableRoots: [], where: verifierWhere(runDir, repo) };
  if (kind === "director") {
    const where = repo
      ? `The current directory is the Solver's checkout of ${repo.path} (read it; do not change it). The run store is ${runDir} ($RELAY_RUN_STORE); you may write in its memory/.`
      : `The current directory is the run store (${runDir}); you may write in its memory/.`;
    return { ...common, cwd: repo ? checkoutDir(runDir) : runDir, writableRoots: [path.join(runDir, "memory")], where };
  }
  const roots = [...(repo ? [checkoutDir(runDir)] : []), ...modelOwnedPaths(runDir)];
  return {
    ...common,
    cwd: repo ? checkoutDir(runDir) : runDir,
    writableRoots: roots,
    where: solverWhere(runDir, repo),
  };
}

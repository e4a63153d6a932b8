/** A writable copy of test/support/fixtures/codex-home with chosen mtimes, and a fingerprint of a folder. */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "../support/paths.ts";
import { DAY, HOUR, writeRollout } from "./support.ts";

const FIXTURES = path.join(REPO_ROOT, "test/support/fixtures");
const DAY_DIR = "sessions/2025/09/24";

/** Session ids of the fixture home, by what each one is. */
export const CODEX = {
  cli: "01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90",
  exec: "01997a40-0000-7000-8000-00000000e1e1",
  vscode: "01997a40-0000-7000-8000-0000000000c5",
  subagent: "01997a40-0000-7000-8000-00000000a6e7",
  mcp: "01997a40-0000-7000-8000-000000000dc0",
  noUserTurn: "01997a40-0000-7000-8000-0000000000e0",
  tornMeta: "01997a40-0000-7000-8000-00000000ba0d",
  corruptMiddle: "01997a40-0000-7000-8000-0000000c0a1e",
} as const;

export interface CodexHome extends AsyncDisposable {
  dir: string;
  tooRecent: string;
  tooOld: string;
  /** A directory named like a rollout: listed, but cannot be read. */
  unreadable: string;
}

/**
 * The fixture home copied to a temp dir: every fixture session last written 9 h ago, plus a
 * cli session written 1 h ago (too recent) and one 20 days ago (too old), and an unreadable entry.
 */
export function codexHomeCopy(now = Date.now()): CodexHome {
  const dir = mkdtempSync(path.join(os.tmpdir(), "codex-home-"));
  cpSync(path.join(FIXTURES, "codex-home", "sessions"), path.join(dir, "sessions"), { recursive: true });
  const day = path.join(dir, DAY_DIR);
  copyFileSync(
    path.join(FIXTURES, "codex-rollout.jsonl"),
    path.join(day, `rollout-2025-09-24T08-15-02-${CODEX.cli}.jsonl`),
  );
  for (const f of readdirSync(day)) utimesSync(path.join(day, f), new Date(now - 9 * HOUR), new Date(now - 9 * HOUR));
  const tooRecent = writeRollout(dir, { mtimeMs: now - 1 * HOUR }).id;
  const tooOld = writeRollout(dir, { mtimeMs: now - 20 * DAY }).id;
  const unreadable = path.join(day, "rollout-2025-09-24T11-00-00-01997a40-0000-7000-8000-0000000d1e00.jsonl");
  mkdirSync(unreadable);
  return {
    dir,
    tooRecent,
    tooOld,
    unreadable,
    async [Symbol.asyncDispose]() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every entry under `dir`: type, mode, size, mtime (ns) and, for files, the SHA-256 of the bytes. */
export function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of (readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const p = path.join(dir, rel);
    const st = lstatSync(p, { bigint: true });
    const hash = st.isFile()
      ? createHash("sha256").update(readFileSync(p)).digest("hex")
      : st.isDirectory()
        ? "dir"
        : "other";
    out[rel] = `${hash} mode=${st.mode.toString(8)} size=${st.size} mtime=${st.mtimeNs}`;
  }
  return out;
}

/** Shared fixtures for memories tests: temp homes, synthetic rollouts with chosen mtimes, DBs. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStateDb, type StateDb } from "../../src/memories/store/db.ts";
import { getThread, upsertThreads } from "../../src/memories/store/threads.ts";
import { uuidv7 } from "../../src/rollout/ids.ts";
import { relayArgv } from "../support/self.ts";

export interface TempHome extends AsyncDisposable {
  home: string;
  dbFile: string;
  memories: string;
}

export function tempHome(): TempHome {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-mem-"));
  return {
    home,
    dbFile: path.join(home, "state.sqlite"),
    memories: path.join(home, "memories"),
    async [Symbol.asyncDispose]() {
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The value of an ok Result; an error Result fails the test with its message. */
export function ok<T>(r: { ok: T } | { error: { message: string } }): T {
  if ("error" in r) throw new Error(r.error.message);
  return r.ok;
}

export async function openDb(spec: string): Promise<StateDb> {
  const r = await openStateDb(spec);
  if ("error" in r) throw new Error(r.error.message);
  return r.ok;
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export interface RolloutSpec {
  id?: string;
  source?: string | Record<string, unknown>;
  cwd?: string;
  branch?: string;
  /** Last modification time (ms). */
  mtimeMs: number;
  user?: string[];
  commands?: string[];
  outputs?: string[];
  final?: string;
  extraItems?: unknown[];
}

/** Writes a rollout in the Codex/Relay JSONL format under `<home>/sessions/Y/M/D/`. */
export function writeRollout(home: string, s: RolloutSpec): { id: string; path: string } {
  const id = s.id ?? uuidv7(s.mtimeMs - HOUR);
  const created = new Date(s.mtimeMs - HOUR);
  const pad = (n: number) => String(n).padStart(2, "0");
  const dir = path.join(
    home,
    "sessions",
    String(created.getFullYear()),
    pad(created.getMonth() + 1),
    pad(created.getDate()),
  );
  mkdirSync(dir, { recursive: true });
  const stamp = `${created.getFullYear()}-${pad(created.getMonth() + 1)}-${pad(created.getDate())}T${pad(created.getHours())}-${pad(created.getMinutes())}-${pad(created.getSeconds())}`;
  const file = path.join(dir, `rollout-${stamp}-${id}.jsonl`);
  const ts = created.toISOString();
  const lines: unknown[] = [
    {
      timestamp: ts,
      type: "session_meta",
      payload: {
        id,
        timestamp: ts,
        cwd: s.cwd ?? "/work/proj",
        originator: "relay",
        cli_version: "0.1.0",
        source: s.source ?? "cli",
        git: s.branch ? { branch: s.branch } : null,
      },
    },
    {
      timestamp: ts,
      type: "response_item",
      payload: { type: "message", role: "developer", content: [{ type: "input_text", text: "developer rules" }] },
    },
  ];
  for (const u of s.user ?? ["fix the failing parser test in src/parser.ts"]) {
    lines.push({
      timestamp: ts,
      type: "response_item",
      payload: { type: "message", role: "user", content: [{ type: "input_text", text: u }] },
    });
  }
  (s.commands ?? ["bun test test/parser.test.ts"]).forEach((c, i) => {
    lines.push({
      timestamp: ts,
      type: "response_item",
      payload: { type: "function_call", name: "exec_command", arguments: JSON.stringify({ cmd: c }), call_id: `c${i}` },
    });
    lines.push({
      timestamp: ts,
      type: "response_item",
      payload: {
        type: "function_call_output",
        call_id: `c${i}`,
        output: s.outputs?.[i] ?? "Process exited with code 0\n1 pass",
      },
    });
  });
  for (const x of s.extraItems ?? []) lines.push({ timestamp: ts, type: "response_item", payload: x });
  lines.push({
    timestamp: ts,
    type: "response_item",
    payload: {
      type: "message",
      role: "assistant",
      content: [
        { type: "output_text", text: s.final ?? "Fixed the off-by-one in src/parser.ts; all parser tests pass now." },
      ],
    },
  });
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  utimesSync(file, new Date(s.mtimeMs), new Date(s.mtimeMs));
  return { id, path: file };
}

function nodeHasSqlite(): boolean {
  const [maj, min] = process.versions.node.split(".").map(Number) as [number, number];
  return maj > 22 || (maj === 22 && min >= 5);
}

/** SQLite-backed suites need bun:sqlite or node:sqlite (Deno, Node >= 22.5); a reason to skip otherwise. */
export const sqliteSkip: false | string =
  process.versions.bun || (globalThis as { Deno?: unknown }).Deno || nodeHasSqlite()
    ? false
    : `node:sqlite needs Node >= 22.5 (this is ${process.versions.node})`;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `relay <args>` with RELAY_HOME = `home`, to its exit. */
export function relay(home: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const [cmd, ...pre] = relayArgv();
  return new Promise((resolve) => {
    const p = spawn(cmd!, [...pre, ...args], {
      env: { ...process.env, RELAY_HOME: home, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

export const OFFLINE = ["--extractor", "heuristic", "--consolidator", "heuristic"];

/**
 * Upserts two rows of one id in one call: the second updates the row the first inserted, as two
 * calls would (created_at_ms and memory_mode stay the first's). Postgres used to refuse this.
 */
export async function assertUpsertsInOrder(db: StateDb): Promise<void> {
  const row = {
    id: "twice",
    origin: "relay",
    rollout_path: "/relay/a.jsonl",
    source: "cli",
    cwd: "/w",
    git_branch: null,
    created_at_ms: 1000,
    updated_at_ms: 2000,
    memory_mode: "enabled",
    host: "h",
  };
  const copy = {
    ...row,
    origin: "codex",
    rollout_path: "/codex/a.jsonl",
    cwd: "/c",
    created_at_ms: 1500,
    updated_at_ms: 3000,
    memory_mode: "disabled",
  };
  ok(await upsertThreads(db, [row, copy]));
  assert.deepEqual(ok(await getThread(db, "twice")), { ...copy, created_at_ms: 1000, memory_mode: "enabled" });
}

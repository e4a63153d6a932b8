/**
 * The first thing `relay run` does (main.ts, before any other module loads): start its executor,
 * so that the executor's start overlaps this process's own. This module imports only two small
 * modules that import nothing (Bun.spawn's types, the runtime's name), so the spawn happens as
 * soon as the runtime runs main.ts (importing the peer first cost 20 ms); protocol/early-child.ts
 * makes a peer of the child when a session takes it. Under Node and Deno, or with a
 * RELAY_SELF_COMMAND that needs a shell's quoting, nothing is started here and the session spawns
 * its executor as before.
 */
import { bunSpawn, spawnWatched, type WatchedChild } from "../util/bun-spawn.ts";
import { currentRuntime } from "../util/runtime.ts";

export interface EarlySpawn {
  argv: string[];
  started: WatchedChild;
}

const started = new Map<string, EarlySpawn>();

/** Starts `relay <subcommand>` with pipes, as protocol/child.ts's spawnSelf would. */
export function spawnEarly(subcommand: string): void {
  const spawn = bunSpawn();
  const argv = selfArgv(subcommand);
  if (!spawn || !argv || started.has(subcommand)) return;
  try {
    const child = spawnWatched(spawn, { cmd: argv, env: process.env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    started.set(subcommand, { argv, started: child });
  } catch {
    // Left for the session's own spawn to report.
  }
}

/** The child started early for `subcommand`, once; the caller owns it from then on. */
export function takeEarlySpawn(subcommand: string): EarlySpawn | undefined {
  const early = started.get(subcommand);
  started.delete(subcommand);
  return early;
}

/** Every child started early that nobody took. */
export function takeAllEarlySpawns(): EarlySpawn[] {
  const all = [...started.values()];
  started.clear();
  return all;
}

/** A RELAY_SELF_COMMAND of plain words (no quoting to undo), split on its spaces. */
const PLAIN_WORDS = /^[\w@%+=:,./-]+( [\w@%+=:,./-]+)*$/;

/**
 * This program's argv for `subcommand` where it needs no parsing: what protocol/child.ts's
 * selfCommand gives (test/protocol/early-spawn.test.ts compares them), else undefined.
 */
export function selfArgv(subcommand: string): string[] | undefined {
  const override = process.env.RELAY_SELF_COMMAND;
  if (override) return PLAIN_WORDS.test(override) ? [...override.split(" "), subcommand] : undefined;
  const runtime = currentRuntime();
  if (runtime === "bun-compiled") return [process.execPath, subcommand];
  const script = process.argv[1];
  return runtime === "bun" && script ? [process.execPath, script, subcommand] : undefined;
}

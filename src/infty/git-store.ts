/**
 * The checkpoints' git repository (isomorphic-git, no git binary), loaded on first use so that
 * `relay infty` pays for it only when it takes or reads a checkpoint. Every file isomorphic-git
 * writes goes through writeFileAtomic: a loose object or a ref is whole or absent after a
 * SIGKILL (isomorphic-git skips writing an object whose file exists, so a torn one would stay).
 */
import * as fsp from "node:fs/promises";
import type { CallbackFsClient, PromiseFsClient } from "isomorphic-git";
import { fsyncAll, writeFileAtomic } from "./durable.ts";
import { count } from "./work-count.ts";

export type Git = typeof import("isomorphic-git").default;

let loaded: Promise<Git> | undefined;

export function loadGit(): Promise<Git> {
  loaded ??= import("isomorphic-git").then((m) => m.default);
  return loaded;
}

/** Objects written since the last syncObjects(): fsynced together before a ref points at them. */
const unsynced = new Set<string>();
/** Loose objects this process wrote (a driver packs them once there are enough: checkpoint-pack.ts). */
let written = 0;

export const looseWritten = () => written;

/**
 * isomorphic-git's cache for reads: each pack's index parsed once and its file read once, not at
 * every object read (restore reads hundreds). It holds whole packs, so a driver drops it once
 * its resume has read what it needs (dropReadCache) and keeps none while it runs.
 */
let reads: object = {};
export const readCache = () => reads;
export const dropReadCache = () => void (reads = {});
export const packedNow = () => void (written = 0);

async function atomicWriteFile(
  file: string,
  data: string | Uint8Array,
  opts?: { mode?: number } | string,
): Promise<void> {
  const mode = typeof opts === "object" && opts?.mode !== undefined ? { mode: opts.mode } : {};
  const isObject = file.split(/[\\/]/).includes("objects");
  await writeFileAtomic(file, data, { ...mode, sync: !isObject });
  if (isObject) unsynced.add(file), written++;
  count("written");
}

/**
 * Makes the objects written so far durable, in one batch of fsyncs; called before a ref is
 * moved onto them, so a power loss never leaves a ref to a missing object.
 */
export async function syncObjects(): Promise<void> {
  const files = [...unsynced];
  unsynced.clear();
  await fsyncAll(files);
}

/** The fs isomorphic-git is given: node's, with atomic file writes. */
export const gitFs: PromiseFsClient | CallbackFsClient = {
  promises: {
    readFile: fsp.readFile,
    writeFile: atomicWriteFile,
    unlink: fsp.unlink,
    readdir: fsp.readdir,
    mkdir: fsp.mkdir,
    rmdir: fsp.rmdir,
    stat: fsp.stat,
    lstat: fsp.lstat,
    readlink: fsp.readlink,
    symlink: fsp.symlink,
    chmod: fsp.chmod,
  },
} as unknown as PromiseFsClient;

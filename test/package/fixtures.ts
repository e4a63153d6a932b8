/** Helpers for the package tests: tiny fake executables and package directories, and trees to compare. */
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, linkSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ArchiveEntry } from "../../src/package/archive.ts";
import {
  describeFiles,
  MANIFEST_NAME,
  type PackageManifest,
  serializeManifest,
  walkTree,
} from "../../src/package/manifest.ts";

/** A minimal 64-bit little-endian ELF header for a CPU (62 = x86-64, 183 = aarch64), plus padding. */
export function fakeElf(machine: 62 | 183, pad = 256): Buffer {
  const b = Buffer.alloc(64 + pad);
  b.write("\x7fELF", 0, "latin1");
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little endian
  b[6] = 1;
  b.writeUInt16LE(2, 16); // ET_EXEC
  b.writeUInt16LE(machine, 18);
  b.writeUInt32LE(1, 20);
  return b;
}

export function fakeMachO(cputype: number): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32LE(0xfeedfacf, 0);
  b.writeUInt32LE(cputype, 4);
  return b;
}

export function fakePe(machine: number): Buffer {
  const b = Buffer.alloc(256);
  b.write("MZ", 0, "latin1");
  b.writeUInt32LE(0x80, 0x3c);
  b.write("PE\0\0", 0x80, "latin1");
  b.writeUInt16LE(machine, 0x84);
  b.writeUInt16LE(0x20b, 0x80 + 24);
  return b;
}

export function writeExec(file: string, data: Buffer | string, mode = 0o755): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, data);
  chmodSync(file, mode);
  return file;
}

/** Deterministic bytes that do not compress to nothing (so archives stream several chunks). */
export function noise(bytes: number, seed = 1): Buffer {
  const b = Buffer.alloc(bytes);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = (x >>> 0) & 0xff;
  }
  return b;
}

/**
 * A small, valid package directory with its manifest: fake binaries, bin/relay-code-mode-host a
 * hard link to bin/relay (as the builder makes it), and a 2.5 MiB data file (several 1 MiB chunks).
 */
export async function fakePackage(dir: string): Promise<PackageManifest> {
  writeExec(path.join(dir, "bin/relay"), Buffer.concat([fakeElf(62), Buffer.from("relay ".repeat(5000))]));
  linkSync(path.join(dir, "bin/relay"), path.join(dir, "bin/relay-code-mode-host"));
  writeExec(path.join(dir, "relay-path/rg"), fakeElf(62, 1000));
  writeExec(path.join(dir, "relay-path/README.txt"), "data file, not executable\n", 0o644);
  writeExec(
    path.join(dir, "relay-path/big.bin"),
    Buffer.concat([noise(2 << 20), Buffer.from("tail ".repeat(100_000))]),
    0o644,
  );
  const files = await describeFiles(dir);
  if ("error" in files) throw new Error(files.error.message);
  const m: PackageManifest = {
    layoutVersion: 1,
    name: "relay",
    variant: "relay",
    version: "0.0.0-test",
    target: "linux-x64",
    entrypoints: { main: "bin/relay", codeModeHost: "bin/relay-code-mode-host" },
    pathDir: "relay-path",
    files: files.ok,
  };
  writeFileSync(path.join(dir, MANIFEST_NAME), serializeManifest(m));
  chmodSync(path.join(dir, MANIFEST_NAME), 0o644);
  return m;
}

/** Copies a directory tree keeping its hard links (cpSync would split them). */
export function copyTreeWithLinks(src: string, dest: string): void {
  const tree = walkTree(src);
  if ("error" in tree) throw new Error(tree.error.message);
  const first = new Map<string, string>();
  mkdirSync(dest, { recursive: true });
  for (const e of tree.ok) {
    const to = path.join(dest, e.path);
    if (e.type === "dir") {
      mkdirSync(to, { recursive: true });
      continue;
    }
    const linked = e.linkKey ? first.get(e.linkKey) : undefined;
    if (linked) linkSync(linked, to);
    else {
      copyFileSync(e.abs, to);
      chmodSync(to, e.mode);
      if (e.linkKey) first.set(e.linkKey, to);
    }
  }
}

/** What a tree comparison looks at of each entry: path, type, permission bits, size and sha256. */
export interface EntryShape {
  path: string;
  type: string;
  mode: number;
  size: number;
  sha256: string;
}

/** Every entry of a directory, as EntryShape. */
export function snapshot(dir: string): EntryShape[] {
  const t = walkTree(dir);
  if ("error" in t) throw new Error(t.error.message);
  const sha = (f: string) => createHash("sha256").update(readFileSync(f)).digest("hex");
  return t.ok.map((e) => ({
    path: e.path,
    type: e.type,
    mode: e.mode,
    size: e.size,
    sha256: e.type === "file" ? sha(e.abs) : "",
  }));
}

/** An archive's entries as EntryShape, to compare with a directory's snapshot. */
export function entryShapes(entries: ArchiveEntry[]): EntryShape[] {
  return entries.map((e) => ({
    path: e.path,
    type: e.type,
    mode: e.mode,
    size: e.size,
    sha256: e.type === "file" ? e.sha256 : "",
  }));
}

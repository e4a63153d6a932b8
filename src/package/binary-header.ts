/**
 * Reads just enough of an executable's header to tell its format, word size and CPU:
 * ELF (class + e_machine, plus the PT_INTERP loader to tell musl from glibc), Mach-O (thin or fat,
 * cputype) and PE (COFF machine + optional header magic).
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { err, ok, type Result } from "../util/result.ts";
import type { Arch, BinaryFormat, TargetInfo } from "./targets.ts";

export interface BinaryHeader {
  format: BinaryFormat;
  /** 64 for ELFCLASS64 / Mach-O 64 / PE32+. */
  bits: 32 | 64;
  /** The CPU, or a description like "machine 0x28" when it is neither x64 nor arm64. */
  arch: Arch | string;
  /** ELF only: the program interpreter (dynamic loader), when there is one. */
  interpreter?: string;
}

const HEAD_BYTES = 64 * 1024;

export function readBinaryHeader(file: string): Result<BinaryHeader> {
  let buf: Buffer;
  try {
    if (!statSync(file).isFile()) return err("bad_binary", `${file} is not a regular file`);
    const fd = openSync(file, "r");
    try {
      buf = Buffer.alloc(HEAD_BYTES);
      const n = readSync(fd, buf, 0, HEAD_BYTES, 0);
      buf = buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    return err("bad_binary", `cannot read ${file}: ${(e as Error).message}`);
  }
  return parseBinaryHeader(buf, file);
}

export function parseBinaryHeader(buf: Buffer, label = "file"): Result<BinaryHeader> {
  if (buf.length >= 20 && buf[0] === 0x7f && buf.toString("latin1", 1, 4) === "ELF") return parseElf(buf, label);
  if (buf.length >= 8) {
    const be = buf.readUInt32BE(0);
    const le = buf.readUInt32LE(0);
    if (le === 0xfeedfacf || le === 0xfeedface)
      return ok({ format: "macho", bits: le === 0xfeedfacf ? 64 : 32, arch: machoCpu(buf.readUInt32LE(4)) });
    if (be === 0xfeedfacf || be === 0xfeedface)
      return ok({ format: "macho", bits: be === 0xfeedfacf ? 64 : 32, arch: machoCpu(buf.readUInt32BE(4)) });
    if (be === 0xcafebabe && buf.length >= 28) {
      // Fat Mach-O: report the first slice (Relay never builds fat binaries, but accept them).
      const n = buf.readUInt32BE(4);
      if (n >= 1 && n < 32) return ok({ format: "macho", bits: 64, arch: machoCpu(buf.readUInt32BE(8)) });
    }
  }
  if (buf.length >= 64 && buf.toString("latin1", 0, 2) === "MZ") return parsePe(buf, label);
  return err("bad_binary", `${label} is not an ELF, Mach-O or PE executable`);
}

function parseElf(buf: Buffer, label: string): Result<BinaryHeader> {
  const cls = buf[4];
  const little = buf[5] === 1;
  if (cls !== 1 && cls !== 2) return err("bad_binary", `${label}: bad ELF class ${cls}`);
  const u16 = (o: number) => (little ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
  const u32 = (o: number) => (little ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const u64 = (o: number) => Number(little ? buf.readBigUInt64LE(o) : buf.readBigUInt64BE(o));
  const machine = u16(18);
  const arch = machine === 62 ? "x64" : machine === 183 ? "arm64" : `machine 0x${machine.toString(16)}`;
  const header: BinaryHeader = { format: "elf", bits: cls === 2 ? 64 : 32, arch };
  if (cls === 2 && buf.length >= 64) {
    const phoff = u64(32);
    const phentsize = u16(54);
    const phnum = u16(56);
    for (let i = 0; i < phnum; i++) {
      const o = phoff + i * phentsize;
      if (o + 56 > buf.length) break;
      if (u32(o) === 3 /* PT_INTERP */) {
        const off = u64(o + 8);
        const size = u64(o + 32);
        if (off + size <= buf.length) header.interpreter = buf.toString("latin1", off, off + size).replace(/\0+$/, "");
        break;
      }
    }
  }
  return ok(header);
}

function machoCpu(cputype: number): string {
  if (cputype === 0x01000007) return "x64";
  if (cputype === 0x0100000c) return "arm64";
  return `cputype 0x${cputype.toString(16)}`;
}

function parsePe(buf: Buffer, label: string): Result<BinaryHeader> {
  const peOff = buf.readUInt32LE(0x3c);
  if (peOff + 26 > buf.length || buf.toString("latin1", peOff, peOff + 4) !== "PE\0\0")
    return err("bad_binary", `${label}: MZ file without a PE header`);
  const machine = buf.readUInt16LE(peOff + 4);
  const magic = buf.readUInt16LE(peOff + 24);
  const arch = machine === 0x8664 ? "x64" : machine === 0xaa64 ? "arm64" : `machine 0x${machine.toString(16)}`;
  return ok({ format: "pe", bits: magic === 0x20b ? 64 : 32, arch });
}

export function describeHeader(h: BinaryHeader): string {
  const fmt = h.format === "elf" ? "ELF" : h.format === "macho" ? "Mach-O" : "PE";
  return `${fmt} ${h.bits}-bit ${h.arch}${h.interpreter ? ` (loader ${h.interpreter})` : ""}`;
}

/** Does `file` look like an executable for `target`? The error says what it is instead. */
export function checkBinaryForTarget(file: string, target: TargetInfo): Result<BinaryHeader> {
  const h = readBinaryHeader(file);
  if ("error" in h) return err("bad_binary", `${h.error.message} (expected a ${target.name} executable)`);
  const hd = h.ok;
  const problems: string[] = [];
  if (hd.format !== target.format) problems.push(`format ${hd.format}`);
  if (hd.bits !== 64) problems.push(`${hd.bits}-bit`);
  if (hd.arch !== target.arch) problems.push(`CPU ${hd.arch}`);
  if (hd.format === "elf" && hd.interpreter && target.libc) {
    const musl = hd.interpreter.includes("musl");
    if (musl !== (target.libc === "musl")) problems.push(`loader ${hd.interpreter}`);
  }
  if (problems.length > 0) {
    return err(
      "wrong_arch",
      `${file} is ${describeHeader(hd)}, not a ${target.name} executable (${problems.join(", ")})`,
    );
  }
  return ok(hd);
}

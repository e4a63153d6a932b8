import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { checkBinaryForTarget, parseBinaryHeader } from "../../src/package/binary-header.ts";
import { hostTarget, parseTarget, TARGET_NAMES, TARGETS } from "../../src/package/targets.ts";
import { fakeElf, fakeMachO, fakePe, writeExec } from "./fixtures.ts";

describe("package targets", () => {
  test("every target maps to a bun target, an @oven package and an exe suffix", () => {
    assert.equal(TARGET_NAMES.length, 7);
    assert.equal(TARGETS["linux-arm64"].bunTarget, "bun-linux-arm64");
    assert.equal(TARGETS["linux-arm64"].ovenPackage, "@oven/bun-linux-aarch64");
    assert.equal(TARGETS["darwin-arm64"].ovenPackage, "@oven/bun-darwin-aarch64");
    assert.equal(TARGETS["linux-x64-musl"].ovenPackage, "@oven/bun-linux-x64-musl");
    assert.equal(TARGETS["linux-x64-baseline"].bunTarget, "bun-linux-x64-baseline");
    assert.equal(TARGETS["windows-x64"].exe, ".exe");
    assert.equal(TARGETS["darwin-x64"].exe, "");
  });

  test("bad targets are refused with the list of supported ones; bun names are accepted", () => {
    const bad = parseTarget("linux-riscv64");
    assert.ok("error" in bad);
    assert.equal(bad.error.code, "bad_target");
    assert.match(bad.error.message, /supported targets: linux-x64, .*windows-x64/);
    const ok = parseTarget("bun-darwin-arm64");
    assert.ok("ok" in ok && ok.ok.name === "darwin-arm64");
  });

  test("host target", () => {
    const h = hostTarget("linux", "arm64");
    assert.ok("ok" in h && h.ok.name === "linux-arm64");
    const w = hostTarget("win32", "x64");
    assert.ok("ok" in w && w.ok.name === "windows-x64");
    const m = hostTarget("darwin", "arm64");
    assert.ok("ok" in m && m.ok.name === "darwin-arm64");
    assert.ok("error" in hostTarget("freebsd", "x64"));
    assert.ok("error" in hostTarget("linux", "ia32"));
  });
});

describe("binary headers", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-hdr-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("ELF, Mach-O and PE: format, class and CPU", () => {
    assert.deepEqual(parseBinaryHeader(fakeElf(183)), { ok: { format: "elf", bits: 64, arch: "arm64" } });
    assert.deepEqual(parseBinaryHeader(fakeElf(62)), { ok: { format: "elf", bits: 64, arch: "x64" } });
    assert.deepEqual(parseBinaryHeader(fakeMachO(0x0100000c)), { ok: { format: "macho", bits: 64, arch: "arm64" } });
    assert.deepEqual(parseBinaryHeader(fakeMachO(0x01000007)), { ok: { format: "macho", bits: 64, arch: "x64" } });
    assert.deepEqual(parseBinaryHeader(fakePe(0x8664)), { ok: { format: "pe", bits: 64, arch: "x64" } });
    assert.ok("error" in parseBinaryHeader(Buffer.from("#!/bin/sh\necho hi\n")));
  });

  test("wrong architecture, wrong format and non-binaries are clear errors", () => {
    const arm = writeExec(path.join(dir, "arm"), fakeElf(183));
    const x64 = writeExec(path.join(dir, "x64"), fakeElf(62));
    const script = writeExec(path.join(dir, "script"), "#!/bin/sh\n");
    assert.ok("ok" in checkBinaryForTarget(arm, TARGETS["linux-arm64"]));
    const wrong = checkBinaryForTarget(x64, TARGETS["linux-arm64"]);
    assert.ok("error" in wrong);
    assert.equal(wrong.error.code, "wrong_arch");
    assert.match(wrong.error.message, /is ELF 64-bit x64, not a linux-arm64 executable/);
    const fmt = checkBinaryForTarget(x64, TARGETS["windows-x64"]);
    assert.ok("error" in fmt && /format elf/.test(fmt.error.message));
    const notBin = checkBinaryForTarget(script, TARGETS["linux-x64"]);
    assert.ok("error" in notBin && /not an ELF, Mach-O or PE/.test(notBin.error.message));
  });

  test("the running executable's own header matches the host target", () => {
    const h = hostTarget();
    if ("error" in h) return;
    const r = checkBinaryForTarget(process.execPath, h.ok);
    assert.ok("ok" in r, JSON.stringify(r));
  });
});

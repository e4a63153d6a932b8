/**
 * Package targets: Relay's target names, the bun `--target` each maps to, the `@oven/bun-*` npm
 * package that carries that target's bun runtime, and what its executables look like.
 */
import { existsSync } from "node:fs";
import { err, ok, type Result } from "../util/result.ts";

export type BinaryFormat = "elf" | "macho" | "pe";
export type Arch = "x64" | "arm64";

export interface TargetInfo {
  name: TargetName;
  /** `bun build --target=` value. */
  bunTarget: string;
  /** npm package holding the bun runtime for the target (`package/bin/bun[.exe]` inside). */
  ovenPackage: string;
  os: "linux" | "darwin" | "windows";
  arch: Arch;
  format: BinaryFormat;
  /** Executable suffix: ".exe" on Windows, "" elsewhere. */
  exe: string;
  libc?: "glibc" | "musl";
}

export const TARGET_NAMES = [
  "linux-x64",
  "linux-x64-baseline",
  "linux-x64-musl",
  "linux-arm64",
  "darwin-arm64",
  "darwin-x64",
  "windows-x64",
] as const;
export type TargetName = (typeof TARGET_NAMES)[number];

const T = (
  name: TargetName,
  oven: string,
  os: TargetInfo["os"],
  arch: Arch,
  libc?: TargetInfo["libc"],
): TargetInfo => ({
  name,
  bunTarget: `bun-${name}`,
  ovenPackage: `@oven/bun-${oven}`,
  os,
  arch,
  format: os === "linux" ? "elf" : os === "darwin" ? "macho" : "pe",
  exe: os === "windows" ? ".exe" : "",
  ...(libc ? { libc } : {}),
});

export const TARGETS: Readonly<Record<TargetName, TargetInfo>> = {
  "linux-x64": T("linux-x64", "linux-x64", "linux", "x64", "glibc"),
  "linux-x64-baseline": T("linux-x64-baseline", "linux-x64-baseline", "linux", "x64", "glibc"),
  "linux-x64-musl": T("linux-x64-musl", "linux-x64-musl", "linux", "x64", "musl"),
  "linux-arm64": T("linux-arm64", "linux-aarch64", "linux", "arm64", "glibc"),
  "darwin-arm64": T("darwin-arm64", "darwin-aarch64", "darwin", "arm64"),
  "darwin-x64": T("darwin-x64", "darwin-x64", "darwin", "x64"),
  "windows-x64": T("windows-x64", "windows-x64", "windows", "x64"),
};

/** Accepts a Relay target name or a bun target name (`bun-linux-arm64`). */
export function parseTarget(raw: string): Result<TargetInfo> {
  const name = raw.trim().replace(/^bun-/, "");
  if ((TARGET_NAMES as readonly string[]).includes(name)) return ok(TARGETS[name as TargetName]);
  return err("bad_target", `unknown target '${raw}'; supported targets: ${TARGET_NAMES.join(", ")}`);
}

/** This machine's target (glibc unless a musl loader is present). */
export function hostTarget(platform: string = process.platform, arch: string = process.arch): Result<TargetInfo> {
  const a = arch === "x64" || arch === "amd64" ? "x64" : arch === "arm64" || arch === "aarch64" ? "arm64" : undefined;
  if (!a)
    return err(
      "bad_target",
      `no package target for this host's CPU '${arch}'; pass --target (one of ${TARGET_NAMES.join(", ")})`,
    );
  if (platform === "linux") {
    if (a === "arm64") return ok(TARGETS["linux-arm64"]);
    return ok(isMuslHost() ? TARGETS["linux-x64-musl"] : TARGETS["linux-x64"]);
  }
  if (platform === "darwin") return ok(a === "arm64" ? TARGETS["darwin-arm64"] : TARGETS["darwin-x64"]);
  if (platform === "win32" && a === "x64") return ok(TARGETS["windows-x64"]);
  return err(
    "bad_target",
    `no package target for host ${platform}-${arch}; pass --target (one of ${TARGET_NAMES.join(", ")})`,
  );
}

function isMuslHost(): boolean {
  return existsSync("/lib/ld-musl-x86_64.so.1") && !existsSync("/lib64/ld-linux-x86-64.so.2");
}

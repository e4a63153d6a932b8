/**
 * A lone copy of the compiled binary packages itself for another target, with no bun, npm or
 * source tree: from its own embedded bundle and a runtime from a seeded cache; and the binary it
 * builds does the same. A cross-target build, so a long suite (.ci/run's long step).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { sha256File } from "../../src/package/manifest.ts";
import { VERSION } from "../../src/version.ts";
import { assertGrammarApproval, loneCopy } from "../support/lone-binary.ts";
import { longSuite } from "../support/long.ts";
import { sharedRelay } from "../support/shared-relay.ts";

const skip =
  longSuite("the lone binary's cross-target self-build", "7 s of compiling on 2 cores") ||
  (!process.versions.bun && "needs Bun to compile") ||
  ((process.platform !== "linux" || process.arch !== "x64") &&
    "seeds linux-x64-baseline with this host's bun (x64 Linux only)");

test("a lone copy recompiles itself for another target from a seeded cache, and the result does too", {
  skip,
}, async () => {
  const machine = mkdtempSync(path.join(os.tmpdir(), "relay-lone-cross-"));
  try {
    const lone = loneCopy(sharedRelay(), path.join(machine, "empty"));
    const home = path.join(machine, "home");
    // The cache as a fetch would leave it, so the test stays offline: the baseline target's
    // runtime is this host's bun (same format and CPU; the cross build cannot tell).
    const version = process.versions.bun!;
    const cacheDir = path.join(home, ".relay", "cache", "bun", version, "linux-x64-baseline");
    mkdirSync(cacheDir, { recursive: true });
    copyFileSync(realpathSync(process.execPath), path.join(cacheDir, "bun"));
    chmodSync(path.join(cacheDir, "bun"), 0o755);
    const meta = {
      package: "@oven/bun-linux-x64-baseline",
      version,
      target: "linux-x64-baseline",
      file: "bun",
      size: statSync(path.join(cacheDir, "bun")).size,
      sha256: await sha256File(path.join(cacheDir, "bun")),
      fetchedAt: new Date().toISOString(),
    };
    writeFileSync(path.join(cacheDir, "meta.json"), JSON.stringify(meta));
    // No bun, no npm, no source tree: PATH has only the system, cwd is an empty directory.
    const env = { PATH: "/usr/bin:/bin", HOME: home, RELAY_NPM_REGISTRY: "http://127.0.0.1:1" };
    const cross = spawnSync(lone, ["package", "build", "--target", "linux-x64-baseline", "--json"], {
      cwd: path.dirname(lone),
      encoding: "utf8",
      env,
    });
    assert.equal(cross.status, 0, cross.stderr);
    const report = JSON.parse(cross.stdout) as {
      packageDir: string;
      compiled?: { from: string; fetched?: boolean; compileExecutablePath?: string };
    };
    assert.match(report.compiled?.from ?? "", /this binary's own bundle/);
    assert.equal(report.compiled?.fetched, false);
    assert.equal(report.compiled?.compileExecutablePath, path.join(cacheDir, "bun"));
    const built = path.join(report.packageDir, "bin", "relay");
    const version2 = spawnSync(built, ["--version"], { encoding: "utf8", env });
    assert.equal(version2.stdout.trim(), VERSION, version2.stderr);
    // It carries the wasm files too: the bash grammar approval reads commands with.
    assertGrammarApproval(built, path.join(machine, "approval"), env);
    // The recompiled binary carries its bundle too: it packages itself again.
    const again = spawnSync(
      built,
      ["package", "build", "--target", "linux-x64-baseline", "--package-dir", path.join(machine, "again"), "--json"],
      { cwd: machine, encoding: "utf8", env },
    );
    assert.equal(again.status, 0, again.stderr);
    const sandboxed = spawnSync(
      path.join(machine, "again", "bin", "relay"),
      ["sandbox", "--", "sh", "-c", "echo inside"],
      { cwd: machine, encoding: "utf8", env },
    );
    assert.equal(sandboxed.stdout, "inside\n", sandboxed.stderr);
  } finally {
    rmSync(machine, { recursive: true, force: true });
  }
});

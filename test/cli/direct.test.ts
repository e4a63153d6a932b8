/**
 * `relay executor` and `relay code-mode-host` with nothing else on the command line start their
 * servers without the command tree (src/cli/direct.ts); every other command line, their help
 * and flags included, goes through commander as before.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { directServer } from "../../src/cli/direct.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { rawFrame } from "../support/raw-frames.ts";
import { runRelayAsync } from "../support/self.ts";
import { until } from "../support/wait.ts";

const argv = (...args: string[]) => ["/usr/bin/relay", "/usr/bin/relay", ...args];

/** A --preload script reporting on stderr any look-up of process.stdin/stdout/stderr (under Bun, the first builds its stream). */
function stdioTrap(dir: string): string {
  const trap = path.join(dir, "trap.ts");
  writeFileSync(
    trap,
    `for (const name of ["stdin", "stdout", "stderr"]) {
  const real = Object.getOwnPropertyDescriptor(process, name)!;
  Object.defineProperty(process, name, { configurable: true, get() { require("node:fs").writeSync(2, "touched process." + name + "\\n"); return real.get ? real.get.call(process) : real.value; } });
}
`,
  );
  return trap;
}

describe("servers started without the command tree", () => {
  test("exactly `relay executor` and `relay code-mode-host` go direct", () => {
    assert.equal(typeof directServer(argv("executor")), "function");
    assert.equal(typeof directServer(argv("code-mode-host")), "function");
  });

  test("flags, help, other commands and object keys go through commander", () => {
    const parsed = [
      argv(),
      argv("executor", "--help"),
      argv("executor", "--check"),
      argv("executor", "--frame-limit", "1024"),
      argv("--verbose", "executor"),
      argv("code-mode-host", "--verbose"),
      argv("run"),
      argv("constructor"),
      argv("__proto__"),
      argv("toString"),
    ];
    for (const a of parsed) assert.equal(directServer(a), undefined, a.slice(2).join(" "));
  });

  test("relay executor --help still prints the executor's help, exit 0", async () => {
    const r = await runRelayAsync(["executor", "--help"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Usage: relay executor/);
    assert.match(r.stdout, /--frame-limit <bytes>/);
  });

  test("relay executor with a bad flag is a usage error (exit 2), not a server", async () => {
    const r = await runRelayAsync(["executor", "--frame-limits", "5"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown option '--frame-limits'/);
  });

  test("a bare --version or -V is answered before the command tree, with the line commander prints for it elsewhere", async () => {
    const direct = await runRelayAsync(["--version"]);
    const short = await runRelayAsync(["-V"]);
    const viaCommander = await runRelayAsync(["--verbose", "--version"]);
    assert.equal(direct.status, 0, direct.stderr);
    assert.match(direct.stdout, /^\d+\.\d+\.\d+\S*\n$/);
    assert.equal(short.stdout, direct.stdout);
    assert.equal(viaCommander.status, 0, viaCommander.stderr);
    assert.equal(viaCommander.stdout, direct.stdout);
  });

  test("a bare --version, relay executor and relay code-mode-host never build process.stdin/stdout/stderr (each costs more than the answer)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-stdio-trap-"));
    try {
      const trap = stdioTrap(dir);
      const run = (args: string[]) =>
        spawnSync(process.execPath, ["--preload", trap, path.join(REPO_ROOT, "src/main.ts"), ...args], {
          encoding: "utf8",
        });
      const version = run(["--version"]);
      assert.equal(version.status, 0, version.stderr);
      assert.match(version.stdout, /^\d+\.\d+\.\d+\S*\n$/);
      assert.equal(version.stderr, "");
      // A server answers its first request, then sees EOF (importing node:process used to build all three).
      for (const [server, method] of [
        ["executor", "executor/info"],
        ["code-mode-host", "codemode/hello"],
      ] as const) {
        const child = spawn(process.execPath, ["--preload", trap, path.join(REPO_ROOT, "src/main.ts"), server], {
          stdio: ["pipe", "pipe", "pipe"],
        });
        let stderr = "";
        child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        child.stdin.write(rawFrame(JSON.stringify({ type: "request", id: 1, method, params: {} })));
        await until(new Promise((answered) => child.stdout.once("data", answered)), `${server}'s answer`);
        child.stdin.end();
        const status = await new Promise((exited) => child.once("close", exited));
        assert.equal(status, 0, stderr);
        assert.doesNotMatch(stderr, /touched process/, server);
      }
      // The trap itself works: commander's help asks process.stdout for its width.
      assert.match(run(["--help"]).stderr, /touched process\.stdout/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

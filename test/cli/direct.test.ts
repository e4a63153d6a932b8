/**
 * `relay executor` and `relay code-mode-host` with nothing else on the command line start their
 * servers without the command tree (src/cli/direct.ts); every other command line, their help
 * and flags included, goes through commander as before.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { directServer } from "../../src/cli/direct.ts";
import { runRelayAsync } from "../support/self.ts";

const argv = (...args: string[]) => ["/usr/bin/relay", "/usr/bin/relay", ...args];

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
});

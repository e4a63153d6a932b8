import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { HOST_BINARY_NAME, resolveHostProgram } from "../../src/protocol/code-mode-host-program.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";

describe("code-mode host discovery", () => {
  test("RELAY_CODE_MODE_HOST_PATH, then a sibling binary, then PATH, then our own subcommand", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-cm-disc-"));
    try {
      const bin = path.join(dir, "bin");
      const onPath = path.join(dir, "on-path");
      mkdirSync(bin);
      mkdirSync(onPath);
      const exe = path.join(bin, "relay");
      const env = { PATH: ["/nonexistent", onPath].join(path.delimiter) };
      assert.deepEqual(resolveHostProgram({ ...env, RELAY_CODE_MODE_HOST_PATH: "/opt/host" }, exe), {
        kind: "path",
        path: "/opt/host",
        source: "env",
      });
      assert.deepEqual(resolveHostProgram(env, exe), { kind: "self" });

      const pathHost = path.join(onPath, HOST_BINARY_NAME);
      writeFileSync(pathHost, "");
      if (process.platform !== "win32")
        assert.deepEqual(resolveHostProgram(env, exe), { kind: "self" }, "a file that cannot be executed is skipped");
      chmodSync(pathHost, 0o755);
      assert.deepEqual(resolveHostProgram(env, exe), { kind: "path", path: pathHost, source: "path" });

      const sibling = path.join(bin, HOST_BINARY_NAME);
      writeFileSync(sibling, "");
      chmodSync(sibling, 0o755);
      assert.deepEqual(resolveHostProgram(env, exe), { kind: "path", path: sibling, source: "sibling" });
      assert.deepEqual(resolveHostProgram({ ...env, RELAY_CODE_MODE_HOST_PATH: "/opt/host" }, exe), {
        kind: "path",
        path: "/opt/host",
        source: "env",
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a host that cannot start fails the session with a clear error", async () => {
    const provider = new HostProvider({
      program: { kind: "path", path: "/nonexistent/relay-code-mode-host", source: "env" },
    });
    try {
      const s = await provider.openSession({ invokeTool: async () => ok(null) });
      assert.ok("error" in s, JSON.stringify(s));
      assert.equal(s.error.code, "code_mode_host_died");
      assert.match(
        s.error.message,
        /code-mode host did not start: .*could not start "\/nonexistent\/relay-code-mode-host"/,
      );
    } finally {
      await provider.close();
    }
  });

  test("a host path is spawned as is; sessions are multiplexed over one host process", {
    skip: process.platform === "win32",
  }, async () => {
    useTestRelay();
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-cm-host-"));
    const script = path.join(dir, HOST_BINARY_NAME);
    writeFileSync(script, `#!/bin/sh\nexec ${joinCommandLine(relayArgv())} code-mode-host "$@"\n`);
    chmodSync(script, 0o755);
    const provider = new HostProvider({ program: { kind: "path", path: script, source: "env" } });
    try {
      const cb = { invokeTool: async () => ok(null) };
      const [a, b] = await Promise.all([provider.openSession(cb), provider.openSession(cb)]);
      assert.ok("ok" in a && "ok" in b);
      const pid = provider.hostPid;
      const ra = await a.ok.execute({ tool_call_id: "1", source: "text('a')" });
      const rb = await b.ok.execute({ tool_call_id: "2", source: "text('b')" });
      assert.ok("ok" in ra && "Result" in ra.ok && "ok" in rb && "Result" in rb.ok);
      assert.equal(ra.ok.Result.cell_id, "1");
      assert.equal(rb.ok.Result.cell_id, "1", "cell ids count per session");
      assert.equal(provider.hostPid, pid, "one host for both sessions");
    } finally {
      await provider.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

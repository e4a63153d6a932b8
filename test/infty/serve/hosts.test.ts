/** relay infty serve on every address prints the addresses people can open, not 0.0.0.0. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { reachableHosts } from "../../../src/infty/serve/server.ts";
import { relayArgv } from "../../support/self.ts";
import { until } from "../../support/wait.ts";

const ifaces = () =>
  ({
    lo: [
      { address: "127.0.0.1", family: "IPv4", internal: true },
      { address: "::1", family: "IPv6", internal: true },
    ],
    eth0: [
      { address: "10.1.2.3", family: "IPv4", internal: false },
      { address: "fe80::1", family: "IPv6", internal: false },
      { address: "2001:db8::5", family: "IPv6", internal: false },
    ],
  }) as unknown as ReturnType<typeof os.networkInterfaces>;

describe("relay infty serve's addresses", () => {
  test("a named host as it is; 0.0.0.0: loopback and each IPv4 address; ::: IPv6 too, not link-local", () => {
    assert.deepEqual(reachableHosts("127.0.0.1", ifaces), ["127.0.0.1"]);
    assert.deepEqual(reachableHosts("10.1.2.3", ifaces), ["10.1.2.3"]);
    assert.deepEqual(reachableHosts("0.0.0.0", ifaces), ["127.0.0.1", "10.1.2.3"]);
    assert.deepEqual(reachableHosts("::", ifaces), ["127.0.0.1", "::1", "10.1.2.3", "2001:db8::5"]);
    assert.deepEqual(reachableHosts("[::]", ifaces), reachableHosts("::", ifaces));
  });

  test("where the system will not list its interfaces, loopback is still there", () => {
    const refuses = () => {
      throw new Error("uv_interface_addresses returned Unknown system error 1");
    };
    assert.deepEqual(reachableHosts("0.0.0.0", refuses), ["127.0.0.1"]);
    assert.deepEqual(reachableHosts("::", refuses), ["127.0.0.1", "::1"]);
  });

  test("--host 0.0.0.0 prints an open line per usable address with the token, and none for 0.0.0.0", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-serve-hosts-"));
    const [cmd, ...pre] = relayArgv();
    const child = spawn(cmd!, [...pre, "infty", "serve", "--host", "0.0.0.0", "--port", "0"], {
      env: { ...process.env, RELAY_HOME: home },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    try {
      await until(
        new Promise<void>((resolve, reject) => {
          child.stderr.setEncoding("utf8").on("data", (d: string) => {
            err += d;
            if (/API clients send/.test(err)) resolve();
          });
          child.once("exit", () => reject(new Error(err)));
        }),
        "relay infty serve to print its addresses",
      );
      const opens = [...err.matchAll(/^open (\S+)$/gm)].map((m) => m[1]!);
      assert.ok(opens.length >= 1, err);
      assert.match(opens[0]!, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+$/);
      assert.doesNotMatch(err, /0\.0\.0\.0:/);
      const page = await fetch(opens[0]!, { redirect: "manual" });
      assert.ok(page.status < 400, `the printed address opens (HTTP ${page.status})`);
    } finally {
      child.kill("SIGINT");
      await new Promise((r) => child.once("exit", r));
      rmSync(home, { recursive: true, force: true });
    }
  });
});

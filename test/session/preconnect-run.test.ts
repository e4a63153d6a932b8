/**
 * `relay run` opens its model connection while its executor is still starting, and its first
 * request goes over that connection. The executor is held back on a FIFO, so the order is
 * certain: a connection seen while it waits can only be the preconnect. A TCP relay in front of
 * the fake model server counts the connections and what each carried.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

const skip = skipBecause(
  "relay run's model preconnect",
  !process.versions.bun && "relay runs on Node or Deno here, whose fetch cannot preconnect",
);

/** A TCP relay to `port`: each connection's count of bytes from the client. */
async function countingRelay(port: number): Promise<{ url: string; sent: number[]; close(): void }> {
  const sent: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const index = sent.push(0) - 1;
    const upstream = net.connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => s.destroy());
    }
    client.on("data", (d: Buffer) => {
      sent[index]! += d.length;
    });
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${own}/v1`,
    sent,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** Lets a still-held executor go (after a failure), so no `sh` is left blocked on the FIFO. */
function releaseHeld(fifo: string): void {
  try {
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    writeSync(fd, "go\n");
    closeSync(fd);
  } catch {
    // No reader waiting (ENXIO), or no FIFO: nothing is held.
  }
}

describe("relay run's model connection", { skip }, () => {
  let dir = "";
  let server: FakeModelServer;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "relay-preconnect-"));
    server = await startFakeModelServer();
  });
  after(async () => {
    releaseHeld(path.join(dir, "go"));
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("is opened while the executor starts, and the first request takes it", async () => {
    const fifo = path.join(dir, "go");
    assert.equal(spawnSync("mkfifo", [fifo]).status, 0, "mkfifo");
    const ws = path.join(dir, "ws");
    const home = path.join(dir, "home");
    mkdirSync(ws);
    mkdirSync(home);
    // The executor starts only once the test writes to the FIFO.
    const held = `read go < ${JSON.stringify(fifo)}; exec ${joinCommandLine([...relayArgv(), "executor"])}`;
    const relay = await countingRelay(server.port);
    try {
      server.enqueue(reply().text("done"));
      const run = runRelayAsync(
        ["run", "-C", ws, "--base-url", relay.url, "-m", "m", "--executor", joinCommandLine(["sh", "-c", held]), "hi"],
        { ...process.env, RELAY_HOME: home, OPENAI_API_KEY: "k" },
      );
      await waitFor(() => relay.sent.length > 0, "relay run to connect to the model server");
      assert.equal(server.requests.length, 0, "no request yet: the executor has not answered");
      const release = await open(fifo, "w");
      await release.write("go\n");
      await release.close();
      const r = await run;
      assert.equal(r.status, 0, r.stderr);
      assert.equal(server.requests.length, 1);
      assert.equal(relay.sent.length, 1, "one connection: the one opened early carried the request");
      assert.ok(relay.sent[0]! > 0, "the request went over it");
    } finally {
      relay.close();
    }
  });
});

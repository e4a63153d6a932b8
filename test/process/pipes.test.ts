/**
 * Pipe-mode children behave the same through Bun.spawn (the binary's path) and through
 * node:child_process (Node and Deno): merged output, exit codes, signal deaths, refused starts,
 * and a controlled child's one message on stdin.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type ControlledProcess, spawnPipesNode } from "../../src/process/spawn/pipes.ts";
import { spawnPipesBun } from "../../src/process/spawn/pipes-bun.ts";
import type { SpawnRequest } from "../../src/process/spawn/types.ts";
import { bunSpawn } from "../../src/util/bun-spawn.ts";
import type { Result } from "../../src/util/result.ts";

type Backend = (req: SpawnRequest, control: boolean) => Result<ControlledProcess>;
const bun = bunSpawn();
const backends: Array<[string, Backend | undefined]> = [
  ["node:child_process", spawnPipesNode],
  ["Bun.spawn", bun && ((req, control) => spawnPipesBun(bun, req, control))],
];

const request = (argv: string[]): SpawnRequest => ({
  argv,
  cwd: process.cwd(),
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  tty: false,
});

async function outputOf(p: ControlledProcess): Promise<string> {
  const chunks: Uint8Array[] = [];
  p.onData((c) => chunks.push(new Uint8Array(c)));
  await p.outputClosed;
  return Buffer.concat(chunks).toString("utf8");
}

for (const [name, spawn] of backends) {
  describe(`pipe-mode children through ${name}`, { skip: spawn ? false : `${name} is not in this runtime` }, () => {
    test("stdout and stderr arrive merged; the exit code is the child's", async () => {
      const r = spawn!(request(["sh", "-c", "echo out; echo err >&2; exit 3"]), false);
      assert.ok("ok" in r, JSON.stringify(r));
      const text = await outputOf(r.ok);
      assert.deepEqual(text.split("\n").filter(Boolean).sort(), ["err", "out"]);
      assert.deepEqual(await r.ok.exited, { code: 3, signal: null });
    });

    test("a child killed by a signal reports 128 + its number and the signal's name", async () => {
      const r = spawn!(request(["sh", "-c", "kill -TERM $$"]), false);
      assert.ok("ok" in r);
      assert.deepEqual(await r.ok.exited, { code: 143, signal: "SIGTERM" });
    });

    test("stdin is closed: a reader ends at once instead of waiting", async () => {
      const r = spawn!(request(["sh", "-c", "cat; echo done"]), false);
      assert.ok("ok" in r);
      assert.equal((await outputOf(r.ok)).trim(), "done");
      assert.equal((await r.ok.exited).code, 0);
    });

    test("a program that is not there is refused with its name", async () => {
      const r = spawn!(request(["/nonexistent/relay-test-program"]), false);
      if ("ok" in r) {
        // node:child_process may report the failure through the exit instead.
        assert.equal((await r.ok.exited).code, -1);
        return;
      }
      assert.equal(r.error.code, "spawn_failed");
      assert.match(r.error.message, /relay-test-program/);
    });

    test("a controlled child reads its one message, then end of file", async () => {
      const r = spawn!(request(["sh", "-c", "cat; echo '<eof>'"]), true);
      assert.ok("ok" in r);
      r.ok.sendAndClose("hello\n");
      assert.equal(await outputOf(r.ok), "hello\n<eof>\n");
    });
  });
}

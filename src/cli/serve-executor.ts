/** `relay executor` serving on stdio (cli/executor.ts parses its flags; cli/direct.ts starts it without them). */
import { serveExecutor } from "../executor/server.ts";
import { armDeathGuard } from "../process/death-guard.ts";
import { runUntilClosed, serveStdio } from "../protocol/index.ts";
import { randomHex } from "../util/random.ts";

/** Serves until stdin closes; every process it started dies with it, whatever ends it. */
export async function serveExecutorMain(frameLimit?: number): Promise<void> {
  const peer = serveStdio({ name: "executor", frameLimit });
  // The guard starts with the first process that carries this executor's marker.
  const instanceId = randomHex(6);
  const manager = serveExecutor(peer, {
    instanceId,
    deterministicIds: process.env.RELAY_DETERMINISTIC_IDS === "1",
    beforeMarkedSpawn: armDeathGuard(instanceId),
  });
  const stop = (code: number) => () => {
    manager.killAllNow();
    process.exit(code);
  };
  process.on("SIGTERM", stop(143));
  process.on("SIGINT", stop(130));
  process.on("SIGHUP", stop(129));
  process.on("exit", () => manager.killAllNow());
  await runUntilClosed(peer, () => manager.killAllNow());
}

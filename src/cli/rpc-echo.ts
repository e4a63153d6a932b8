/**
 * `relay rpc-echo`: a minimal protocol server used by the protocol tests and the frame
 * benchmark to exercise self re-exec without any other subsystem. Hidden from --help.
 */

import { Command } from "@commander-js/extra-typings";
import { z } from "zod";
import { defineMethod, specSchemas } from "../contracts/method.ts";
import { runUntilClosed, serveStdio, spawnSelf } from "../protocol/index.ts";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok } from "../util/result.ts";
import { wholeNumber } from "./number-flag.ts";
import * as checks from "./rpc-echo-checks.generated.ts";

export const EchoMethod = defineMethod(
  "echo",
  lazySchema(() => z.unknown()),
  lazySchema(() => z.unknown()),
  [],
);
export const SleepMethod = defineMethod(
  "sleep",
  lazySchema(() => z.object({ ms: z.number().int().min(0) })),
  lazySchema(() => z.object({ slept: z.number() })),
  [],
);
export const ExitMethod = defineMethod(
  "exit",
  lazySchema(() => z.object({ code: z.number().int() })),
  lazySchema(() => z.null()),
  [],
);
/** Re-execs this same program as a grandchild and echoes through it: proves self re-exec. */
export const RelayEchoMethod = defineMethod(
  "relay_echo",
  lazySchema(() => z.unknown()),
  lazySchema(() => z.object({ echoed: z.unknown(), childPid: z.number(), selfPid: z.number() })),
  ["invalid_command_line", "no_self_command", "spawn_failed"],
);

/**
 * The schemas of rpc-echo's methods, by the names of their generated checks
 * (npm run build:validators writes them to rpc-echo-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(
  checks,
  specSchemas({ echo: EchoMethod, sleep: SleepMethod, exit: ExitMethod, relayEcho: RelayEchoMethod }),
);

export function rpcEchoCommand() {
  return new Command("rpc-echo")
    .description("internal: answer echo/sleep/exit requests over the framed protocol on stdio")
    .option("--frame-limit <bytes>", "maximum frame size in bytes", wholeNumber("--frame-limit"))
    .action(async (opts) => {
      const peer = serveStdio({ name: "rpc-echo", frameLimit: opts.frameLimit });
      peer.handle(EchoMethod, (p) => ok(p));
      peer.handle(SleepMethod, async (p, ctx) => {
        const started = Date.now();
        const done = await new Promise<boolean>((resolve) => {
          const t = setTimeout(() => resolve(true), p.ms);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(t);
            resolve(false);
          });
        });
        return done ? ok({ slept: Date.now() - started }) : err("cancelled", "sleep was cancelled");
      });
      peer.handle(ExitMethod, (p) => process.exit(p.code));
      peer.handle(RelayEchoMethod, async (p) => {
        const child = spawnSelf("rpc-echo");
        if ("error" in child) return child;
        const echoed = await child.ok.peer.call(EchoMethod, p);
        const childPid = child.ok.pid ?? -1;
        await child.ok.shutdown();
        if ("error" in echoed) return echoed;
        return ok({ echoed: echoed.ok, childPid, selfPid: process.pid });
      });
      await runUntilClosed(peer);
    });
}

/**
 * Server side of a child peer: the protocol owns stdout, so anything else that would print
 * there is sent to stderr instead. Resolves when the parent closes our stdin.
 */
import { Log } from "../util/log.ts";
import { BunStdin, BunStdout } from "./bun-stdio.ts";
import { type PeerOptions, RpcPeer } from "./peer.ts";

const log = Log.create("protocol");

/** This process's stdout when Bun's own sink serves it (see bun-stdio.ts). */
let bunStdout: BunStdout | undefined;
/**
 * Longest an exiting server waits for its queued answers while its parent lives but does not read
 * them. A parent that is only slow (a loaded machine reading a 4 MiB answer) must not lose them,
 * so this is a last resort; a parent that died is noticed within PARENT_CHECK_MS.
 */
const EXIT_DRAIN_MS = 60_000;
const PARENT_CHECK_MS = 100;
/**
 * Whether the parent this server answers has died: a parent killed by SIGKILL leaves this process
 * to another, and nobody reads our answers then. Set when serving begins.
 */
let parentGone: () => boolean = () => false;

export function serveStdio(options: PeerOptions = {}): RpcPeer {
  const toStderr = (...args: unknown[]) => process.stderr.write(args.map(String).join(" ") + "\n");
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  // Under Bun, building process.stdin and process.stdout costs milliseconds of every start.
  const onBun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
  if (onBun) bunStdout ??= new BunStdout();
  const parent = process.ppid;
  parentGone = () => process.ppid !== parent;
  return new RpcPeer(onBun ? new BunStdin() : process.stdin, bunStdout ?? process.stdout, {
    onProtocolError: (m) => {
      log.warn("protocol error", { message: m });
      process.stderr.write(`relay: ${m}\n`);
    },
    answerBeforeEnd: true,
    clientGone: parentGone,
    ...options,
  });
}

/** Resolves once the answers queued for stdout have reached the pipe: exiting earlier would cut them. */
function stdoutDrained(): Promise<void> {
  if (bunStdout) return bunStdout.drained();
  const out = process.stdout;
  if (out.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    out.once("drain", resolve);
    out.once("error", resolve);
    out.once("close", resolve);
  });
}

/** Resolves once the parent has died (nobody will read the answers then) or after EXIT_DRAIN_MS. */
function parentGoneOrLimit(): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (parentGone() || Date.now() - started >= EXIT_DRAIN_MS) {
        clearInterval(timer);
        resolve();
      }
    }, PARENT_CHECK_MS);
  });
}

/**
 * Keeps a stdio server alive until its peer closes, then exits once its queued answers are out
 * (a parent may close stdin right after its last request): 0 after a clean EOF from the parent,
 * 1 (with the reason on stderr) after a protocol or I/O error.
 */
export async function runUntilClosed(peer: RpcPeer, cleanup?: () => Promise<void> | void): Promise<never> {
  const reason = await peer.closed;
  if (cleanup) await cleanup();
  await Promise.race([stdoutDrained(), parentGoneOrLimit()]);
  if (peer.failed) {
    log.error("stopped", { peer: peer.name, reason });
    process.stderr.write(`relay: ${peer.name} stopped: ${reason}\n`);
    process.exit(1);
  }
  process.exit(0);
}

/**
 * Server side of a child peer: the protocol owns stdout, so anything else that would print
 * there is sent to stderr instead. Resolves when the parent closes our stdin.
 */
import { Log } from "../util/log.ts";
import { RpcPeer, type PeerOptions } from "./peer.ts";

const log = Log.create("protocol");

export function serveStdio(options: PeerOptions = {}): RpcPeer {
  const toStderr = (...args: unknown[]) => process.stderr.write(args.map(String).join(" ") + "\n");
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  return new RpcPeer(process.stdin, process.stdout, {
    onProtocolError: (m) => {
      log.warn("protocol error", { message: m });
      process.stderr.write(`relay: ${m}\n`);
    },
    ...options,
  });
}

/**
 * Keeps a stdio server alive until its peer closes, then exits: 0 after a clean EOF from the
 * parent, 1 (with the reason on stderr) after a protocol or I/O error.
 */
export async function runUntilClosed(peer: RpcPeer, cleanup?: () => Promise<void> | void): Promise<never> {
  const reason = await peer.closed;
  if (cleanup) await cleanup();
  if (peer.failed) {
    log.error("stopped", { peer: peer.name, reason });
    process.stderr.write(`relay: ${peer.name} stopped: ${reason}\n`);
    process.exit(1);
  }
  process.exit(0);
}

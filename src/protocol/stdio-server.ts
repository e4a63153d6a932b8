/**
 * Server side of a child peer: the protocol owns stdout, so anything else that would print
 * there is sent to stderr instead. Resolves when the parent closes our stdin.
 */
import { RpcPeer, type PeerOptions } from "./peer.ts";

export function serveStdio(options: PeerOptions = {}): RpcPeer {
  const toStderr = (...args: unknown[]) => process.stderr.write(args.map(String).join(" ") + "\n");
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  return new RpcPeer(process.stdin, process.stdout, {
    onProtocolError: (m) => process.stderr.write(`relay: ${m}\n`),
    ...options,
  });
}

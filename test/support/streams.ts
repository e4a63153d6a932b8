/** In-process stream pairs for protocol tests. */
import { PassThrough } from "node:stream";
import { type PeerOptions, RpcPeer } from "../../src/protocol/peer.ts";

export function peerPair(
  a: PeerOptions = {},
  b: PeerOptions = {},
): { left: RpcPeer; right: RpcPeer; leftToRight: PassThrough; rightToLeft: PassThrough } {
  const leftToRight = new PassThrough();
  const rightToLeft = new PassThrough();
  const left = new RpcPeer(rightToLeft, leftToRight, { name: "left", ...a });
  const right = new RpcPeer(leftToRight, rightToLeft, { name: "right", ...b });
  return { left, right, leftToRight, rightToLeft };
}

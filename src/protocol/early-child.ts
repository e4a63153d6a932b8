/**
 * The children main.ts started before anything else (protocol/early-spawn.ts), as peers: the
 * session takes `relay run`'s executor from here instead of spawning one. One nobody takes is
 * shut down, or ends by itself with this process (its input closes).
 */

import { type ChildPeer, connectChild } from "./child.ts";
import { bunChildIo } from "./child-io.ts";
import { type EarlySpawn, takeAllEarlySpawns, takeEarlySpawn } from "./early-spawn.ts";

const peerOf = (early: EarlySpawn, name: string): ChildPeer =>
  connectChild(early.argv, bunChildIo(early.started), { name });

/** The child started early for `subcommand`, as a peer, once: the caller owns it from then on. */
export function takeEarly(subcommand: string): ChildPeer | undefined {
  const early = takeEarlySpawn(subcommand);
  return early ? peerOf(early, subcommand) : undefined;
}

/** Shuts down the children nobody took (e.g. a session that runs on a remote executor). */
export async function closeEarly(): Promise<void> {
  await Promise.all(takeAllEarlySpawns().map((early) => peerOf(early, early.argv.at(-1)!).shutdown()));
}

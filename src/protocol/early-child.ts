/**
 * A child of this program spawned before the command line is even parsed (main.ts starts
 * `relay run`'s executor so), so that its start overlaps this process's own. Whoever needs that
 * child takes it; one nobody takes is shut down, or ends by itself with this process (its input
 * closes).
 */
import { type ChildPeer, spawnSelf } from "./child.ts";

const early = new Map<string, ChildPeer>();

/** Starts `relay <subcommand>` now; a failure to spawn is left for the later spawn to report. */
export function spawnEarly(subcommand: string): void {
  if (early.has(subcommand)) return;
  const spawned = spawnSelf(subcommand, [], { name: subcommand });
  if ("ok" in spawned) early.set(subcommand, spawned.ok);
}

/** The child spawned early for `subcommand`, once: the caller owns it from then on. */
export function takeEarly(subcommand: string): ChildPeer | undefined {
  const child = early.get(subcommand);
  early.delete(subcommand);
  return child;
}

/** Shuts down the children nobody took (e.g. a session that runs on a remote executor). */
export async function closeEarly(): Promise<void> {
  const left = [...early.values()];
  early.clear();
  await Promise.all(left.map((child) => child.shutdown()));
}

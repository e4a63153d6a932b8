/**
 * What the container's init makes once and keeps for commands with the same plan: the Landlock
 * ruleset (one per set of rules) and the user + mount namespace with the protected paths
 * read-only (one per set of protected paths and hidden sockets). A command then gets them
 * ready-made instead of its child opening and adding every rule's path (about 85 µs of system
 * calls per command on the project's machine) and making its own namespaces (about 80 µs, and
 * their teardown when it ends). Each is used only while every path it was made from still
 * names the same file (confine.c relay_paths_current), that is while one made now would be
 * the same; otherwise it is closed and made again.
 */
import { closeSync } from "node:fs";
import type { Native } from "./confine-cc.ts";
import { rulesetAttrSize, Scope } from "./landlock-plan.ts";
import { CArgs } from "./libc.ts";
import type { ConfinePlan } from "./plan-schema.ts";

/** statx's number on each CPU relay builds for. */
const STATX_NR: Record<string, number> = { x64: 332, arm64: 291 };
/** Policies rarely vary within one executor; a few of each cover its commands. */
const MAX_KEPT = 8;

/** Indexes into what confine.c's relay_spawn_child takes as `kept` (-1: none, the child makes its own). */
const RULESET = 0;
const USER_NS = 1;
const MNT_NS = 2;

interface Made {
  fds: number[];
  /** Keeps the encoded paths alive for the checks. */
  args: CArgs;
  paths: number;
  /** Two u64 per path: its device and inode when this was made. */
  ids: BigUint64Array;
}

/** Made things keyed by what they were made for, each checked against its paths before use. */
class Kept {
  private readonly made = new Map<string, Made>();
  constructor(
    private readonly native: Native,
    private readonly statx: number,
  ) {}

  /**
   * The fds kept for `key`, or made by `make` from the paths `paths()` lists (only asked for
   * then) where there are none, or none current; undefined if making failed.
   */
  get(
    key: string,
    paths: () => string[],
    make: (args: CArgs, paths: number, ids: BigUint64Array) => number[] | undefined,
  ) {
    const found = this.made.get(key);
    if (found && this.native.symbols.relay_paths_current(found.paths, this.native.ffi.ptr(found.ids), this.statx) === 1)
      return found.fds;
    if (found) this.drop(key, found);
    const args = new CArgs(this.native.ffi);
    const list = paths();
    const encoded = args.strArray(list);
    const ids = new BigUint64Array(Math.max(1, list.length * 2));
    const fds = make(args, encoded, ids);
    if (!fds) return undefined;
    if (this.made.size >= MAX_KEPT) {
      const [oldestKey, oldest] = this.made.entries().next().value as [string, Made];
      this.drop(oldestKey, oldest);
    }
    this.made.set(key, { fds, args, paths: encoded, ids });
    return fds;
  }

  private drop(key: string, made: Made): void {
    this.made.delete(key);
    for (const fd of made.fds) closeSync(fd);
  }
}

export class KeptConfinement {
  private readonly rulesets: Kept | undefined;
  private readonly namespaces: Kept | undefined;
  constructor(private readonly native: Native) {
    const statx = STATX_NR[process.arch];
    this.rulesets = statx === undefined ? undefined : new Kept(native, statx);
    this.namespaces = statx === undefined ? undefined : new Kept(native, statx);
  }

  /**
   * What `plan`'s command can take ready-made, as relay_spawn_child's `kept`. The fds stay
   * this cache's. Where something cannot be made here (an unknown CPU, a path gone, a kernel
   * refusal) its slot is -1: the command's child then makes its own and reports what failed.
   */
  for(plan: ConfinePlan): Int32Array {
    const kept = Int32Array.of(-1, -1, -1);
    const ruleset = plan.rules.length > 0 ? this.ruleset(plan) : undefined;
    if (ruleset !== undefined) kept[RULESET] = ruleset;
    // Without Landlock's signal scope a command could stop the child that makes the namespace
    // (relay_build_namespaces waits for it, as vfork's parent), and the init with it: each
    // command's own forked child makes its namespace then, watched for a stop (spawn_forked).
    const ns = plan.scoped & Scope.SIGNAL ? this.mountNamespace(plan) : undefined;
    if (ns) {
      kept[USER_NS] = ns[0]!;
      kept[MNT_NS] = ns[1]!;
    }
    return kept;
  }

  private ruleset(plan: ConfinePlan): number | undefined {
    const key = `${plan.abi} ${plan.handledFs} ${plan.handledNet} ${plan.scoped}\0${plan.rules.map((r) => `${r.access} ${r.path}`).join("\0")}`;
    return this.rulesets?.get(
      key,
      () => plan.rules.map((r) => r.path),
      (args, paths, ids) => {
        const fd = this.native.symbols.relay_build_ruleset(
          plan.handledFs,
          plan.handledNet,
          plan.scoped,
          rulesetAttrSize(plan.abi),
          paths,
          args.u64Array(plan.rules.map((r) => r.access)),
          args.bytes(ids),
          STATX_NR[process.arch]!,
        );
        return fd >= 0 ? [fd] : undefined;
      },
    )?.[0];
  }

  private mountNamespace(plan: ConfinePlan): number[] | undefined {
    const hide = plan.hide ?? [];
    const key = `${plan.readOnly.join("\0")}\0\0${hide.join("\0")}`;
    return this.namespaces?.get(
      key,
      () => [...plan.readOnly, ...hide],
      (args, _paths, ids) => {
        const out = new Int32Array(2);
        const r = this.native.symbols.relay_build_namespaces(
          args.strArray(plan.readOnly),
          args.strArray(hide),
          args.bytes(ids),
          STATX_NR[process.arch]!,
          args.bytes(out),
        );
        return r === 0 ? [out[0]!, out[1]!] : undefined;
      },
    );
  }
}

/**
 * Landlock rulesets the container's init keeps, one per set of rules: a command under rules
 * seen before gets the ruleset already built, instead of its child opening every rule's path
 * and adding it again (about 85 µs of system calls per command on the project's machine). A
 * kept ruleset is used only while each of its paths still names the file it was built from
 * (confine.c relay_ruleset_current), that is while a ruleset built now would be the same one;
 * otherwise it is closed and built again.
 */
import { closeSync } from "node:fs";
import type { Native } from "./confine-cc.ts";
import { rulesetAttrSize } from "./landlock-plan.ts";
import { CArgs } from "./libc.ts";
import type { ConfinePlan } from "./plan-schema.ts";

/** statx's number on each CPU relay builds for. */
const STATX_NR: Record<string, number> = { x64: 332, arm64: 291 };
/** Policies rarely vary within one executor; a few sets of rules cover its commands. */
const MAX_KEPT = 8;

interface Kept {
  fd: number;
  /** Keeps the encoded paths alive for the checks. */
  args: CArgs;
  paths: number;
  /** Two u64 per rule path: its device and inode when the ruleset was built. */
  ids: BigUint64Array;
}

export class KeptRulesets {
  private readonly kept = new Map<string, Kept>();
  constructor(private readonly native: Native) {}

  /**
   * A ruleset's fd for `plan`'s rules, current and owned by this cache (the caller must not
   * close it); -1 when none can be kept here (no rules, an unknown CPU, or building it failed:
   * the command's child then builds its own and reports what failed).
   */
  rulesetFor(plan: ConfinePlan): number {
    const statx = STATX_NR[process.arch];
    if (statx === undefined || plan.rules.length === 0) return -1;
    const key = keyOf(plan);
    const found = this.kept.get(key);
    if (found && this.native.symbols.relay_ruleset_current(found.paths, this.native.ffi.ptr(found.ids), statx) === 1)
      return found.fd;
    if (found) this.drop(key, found);
    const made = this.build(plan, statx);
    if (!made) return -1;
    if (this.kept.size >= MAX_KEPT) {
      const [oldestKey, oldest] = this.kept.entries().next().value as [string, Kept];
      this.drop(oldestKey, oldest);
    }
    this.kept.set(key, made);
    return made.fd;
  }

  private build(plan: ConfinePlan, statx: number): Kept | undefined {
    const args = new CArgs(this.native.ffi);
    const paths = args.strArray(plan.rules.map((r) => r.path));
    const ids = new BigUint64Array(plan.rules.length * 2);
    const fd = this.native.symbols.relay_build_ruleset(
      plan.handledFs,
      plan.handledNet,
      plan.scoped,
      rulesetAttrSize(plan.abi),
      paths,
      args.u64Array(plan.rules.map((r) => r.access)),
      args.bytes(ids),
      statx,
    );
    return fd >= 0 ? { fd, args, paths, ids } : undefined;
  }

  private drop(key: string, kept: Kept): void {
    this.kept.delete(key);
    closeSync(kept.fd);
  }
}

/** What makes two plans' rulesets the same: the handled rights, the ABI and every rule. */
function keyOf(plan: ConfinePlan): string {
  const rules = plan.rules.map((r) => `${r.access} ${r.path}`).join("\0");
  return `${plan.abi} ${plan.handledFs} ${plan.handledNet} ${plan.scoped}\0${rules}`;
}

/** The named checks of git subcommands that list or change (branch, tag, stash, notes, config…). */

import { has, type ParsedArgs } from "./options.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

/** `git branch NAME` and `git tag NAME` create; with a listing option the names are patterns. */
export function listingOnly(p: ParsedArgs, sub: string, listing: string[]): Safety {
  const created = p.positionals[0];
  if (!created || has(p, ...listing)) return SAFE;
  return ask(`git ${sub} ${created.raw} ${sub === "branch" ? "changes branches" : "changes tags"}`);
}

/** The first positional must be one of `allowed`; `bare` allows none at all (plain listing). */
export function subcommandIn(p: ParsedArgs, sub: string, allowed: string[], bare: boolean): Safety {
  const sub2 = p.positionals[0];
  if (!sub2) return bare ? SAFE : ask(`git ${sub} without a subcommand changes the repository`);
  if (sub2.fixed && allowed.includes(sub2.value)) return SAFE;
  return ask(`git ${sub} ${sub2.raw} may change the repository`);
}

export function configCheck(p: ParsedArgs): Safety {
  const head = p.positionals[0]?.value;
  if (head === "get" || head === "list") return SAFE;
  if (p.options.some((o) => o.name.startsWith("--get") || o.name === "--list" || o.name === "-l")) return SAFE;
  if (p.positionals.length === 1 && head && /^[A-Za-z0-9.-]+\.[A-Za-z0-9-]+$/.test(head)) return SAFE;
  return ask("git config with these arguments changes the configuration");
}

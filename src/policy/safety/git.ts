/** git: its global options, then the subcommand, which must be one that only reads. */

import type { Word } from "../../util/shell-ast.ts";
import { computed, isSafety, scanArgs } from "./options.ts";
import { policyTables } from "./policy-tables.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

const GIT_GLOBAL_VALUE = new Set(["-C", "--git-dir", "--work-tree", "--namespace"]);
const GIT_GLOBAL_FLAG = new Set([
  "--no-pager",
  "-P",
  "--paginate",
  "-p",
  "--bare",
  "--no-replace-objects",
  "--literal-pathspecs",
  "--glob-pathspecs",
  "--noglob-pathspecs",
  "--icase-pathspecs",
  "--no-optional-locks",
  "--version",
  "--help",
]);

/** `git [global options] SUBCOMMAND ARGS`: the subcommand must be on the git read-only list. */
export function checkGit(args: Word[]): Safety {
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed) return computed(w, "git");
    const key = w.value.split("=")[0] ?? "";
    if (GIT_GLOBAL_FLAG.has(w.value)) continue;
    if (GIT_GLOBAL_VALUE.has(key)) {
      if (!w.value.includes("=")) i++;
      continue;
    }
    if (key === "-c" || key === "--config-env" || key === "--exec-path")
      return ask(`git ${key} can set options that run programs`);
    if (w.value.startsWith("-")) return ask(`git ${w.value} is not understood`);
    break;
  }
  const sub = args[i];
  if (!sub) return SAFE;
  const spec = policyTables().gitRead.get(sub.value);
  if (!spec) return ask(`git ${sub.value} may change the repository`);
  const p = scanArgs(`git ${sub.value}`, args.slice(i + 1), spec);
  if (isSafety(p)) return p;
  return spec.check ? spec.check(p) : SAFE;
}

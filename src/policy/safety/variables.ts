/** Which shell variables a command may set without changing what runs or where it writes. */

import type { Word } from "../../util/shell-ast.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

/** Variables that nothing runs or loads code from, so setting them is harmless. */
const HARMLESS_ENV =
  /^(LC_[A-Z]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|TERM|GREP_COLORS)$/;
/** Lower-case names that zsh ties to its search paths. */
const ZSH_SPECIAL = new Set(["path", "cdpath", "fpath", "manpath", "module_path", "mailpath", "psvar"]);
/** Pagers are run as commands: only ones that just print are allowed. */
const PAGER_VARS = new Set(["PAGER", "GIT_PAGER"]);

/** Setting `name` (to the value in `word`, `NAME=VALUE`) changes nothing that runs or writes. */
export function checkVariable(name: string, word?: Word): Safety {
  if (HARMLESS_ENV.test(name)) return SAFE;
  if (/^[a-z_][a-z0-9_]*$/.test(name) && !ZSH_SPECIAL.has(name)) return SAFE;
  if (PAGER_VARS.has(name) && word?.fixed && ["cat", ""].includes(word.value.slice(word.value.indexOf("=") + 1)))
    return SAFE;
  return ask(`setting ${name} can change what a command runs or where it writes`);
}

/**
 * The named checks of single commands that approval-policy.json's rules refer to, for what their
 * options alone cannot say: date's clock, find's actions, printf -v, dd's operands, read's
 * variables, and test's and `[[`'s operators. sed's is sed.ts, git's git-checks.ts.
 */

import { SHELL_NAME, type Word } from "../../util/shell-ast.ts";
import { computed, type ParsedArgs } from "./options.ts";
import { checkVariable } from "./variables.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

const WRITES = "writes a file";
const RUNS = "runs another program";

export function dateCheck(p: ParsedArgs): Safety {
  const setting = p.positionals.find((w) => !w.value.startsWith("+"));
  return setting ? ask(`date ${setting.raw} sets the clock`) : SAFE;
}

const FIND_DENIED: Readonly<Record<string, string>> = {
  "-delete": "deletes files",
  "-exec": RUNS,
  "-execdir": RUNS,
  "-ok": RUNS,
  "-okdir": RUNS,
  "-fprint": WRITES,
  "-fprint0": WRITES,
  "-fprintf": WRITES,
  "-fls": WRITES,
};

/** find's expression words are single-dash words anywhere, so every word is checked. */
export function findWords(args: readonly Word[]): Safety {
  for (const w of args) {
    if (!w.fixed && w.mayBeOption) return computed(w, "find");
    const what = w.fixed ? FIND_DENIED[w.value] : undefined;
    if (what) return ask(`find ${w.value} ${what}`);
  }
  return SAFE;
}

/** printf's only option is `-v VAR` (assign instead of print), and only as the first word. */
export function printfWords(args: readonly Word[]): Safety {
  const f = args[0];
  if (!f || (f.fixed && !f.value.startsWith("-v"))) return SAFE;
  if (f.fixed) return ask("printf -v sets a shell variable");
  return f.mayBeOption ? computed(f, "printf") : SAFE;
}

const DD_READ_OPERANDS = new Set([
  "if",
  "bs",
  "ibs",
  "obs",
  "cbs",
  "count",
  "skip",
  "iseek",
  "status",
  "iflag",
  "conv",
]);

export function ddCheck(p: ParsedArgs): Safety {
  for (const w of p.positionals) {
    if (!w.fixed) return ask(`relay cannot check the computed dd operand ${w.raw}`);
    const key = w.value.split("=")[0] ?? "";
    if (key === "of" || key === "seek" || key === "oseek" || key === "oflag") return ask(`dd ${key}= writes a file`);
    if (!w.value.includes("=") || !DD_READ_OPERANDS.has(key)) return ask(`dd operand ${w.raw} is not understood`);
  }
  return SAFE;
}

/** `read` assigns to the names it is given; they must be harmless to set. */
export function readCheck(p: ParsedArgs): Safety {
  const names = [
    ...p.positionals.map((w) => (w.fixed ? w.value : "")),
    ...p.options.filter((o) => o.name === "-a").map((o) => o.value ?? ""),
  ];
  for (const n of names) {
    if (!SHELL_NAME.test(n)) return ask(`read into ${n || "a computed name"} is not understood`);
    const v = checkVariable(n);
    if (!v.safe) return v;
  }
  return SAFE;
}

const TEST_BINARY = new Set([
  "=",
  "==",
  "!=",
  "<",
  ">",
  "-eq",
  "-ne",
  "-lt",
  "-le",
  "-gt",
  "-ge",
  "-nt",
  "-ot",
  "-ef",
  "-a",
  "-o",
]);
const ARITHMETIC_COMPARE = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);
const isFixed = (w: Word | undefined, ...values: string[]): boolean => w?.fixed === true && values.includes(w.value);

/** `-v NAME[SUBSCRIPT]` evaluates the subscript as arithmetic, and `a[$(cmd)]` there runs cmd. */
function testVariableCheck(cmd: string, args: readonly Word[]): Safety {
  for (let i = 0; i < args.length; i++) {
    const operand = args[i + 1];
    if (isFixed(args[i], "-v") && !(operand?.fixed && SHELL_NAME.test(operand.value))) {
      return ask(`${cmd} -v ${operand?.raw ?? ""} evaluates an array subscript, which can run commands`);
    }
  }
  return SAFE;
}

/**
 * `test` and `[`: operators are plain words, so a computed word where an operator may stand
 * could be `-v` (above); where each operator stands follows from the number of arguments.
 */
export function testWords(all: readonly Word[]): Safety {
  const args = isFixed(all.at(-1), "]") ? all.slice(0, -1) : all;
  const split = args.find((w) => w.splits);
  if (split) return ask(`relay cannot count the arguments of test: ${split.raw} may split into several`);
  const v = testVariableCheck("test", args);
  if (!v.safe) return v;
  const [a, b, c, d] = args;
  const n = args.length;
  const operatorsFixed =
    n <= 1 ||
    (n === 2 && a!.fixed) ||
    (n === 3 &&
      (isFixed(b, ...TEST_BINARY) || (isFixed(a, "!") && b!.fixed) || (isFixed(a, "(") && isFixed(c, ")")))) ||
    (n === 4 && ((isFixed(a, "!") && isFixed(c, ...TEST_BINARY)) || (isFixed(a, "(") && isFixed(d, ")") && b!.fixed)));
  const computedWord = args.find((w) => !w.fixed);
  return operatorsFixed || !computedWord
    ? SAFE
    : ask(`relay cannot tell whether ${computedWord.raw} is an operator of test`);
}

/** `[[ ]]`: operators are syntax, but `-eq` and its kin evaluate their operands as arithmetic. */
export function doubleBracketWords(args: readonly Word[]): Safety {
  const v = testVariableCheck("[[", args);
  if (!v.safe) return v;
  for (let i = 0; i < args.length; i++) {
    if (!isFixed(args[i], ...ARITHMETIC_COMPARE)) continue;
    const operand = [args[i - 1], args[i + 1]].find((w) => !(w?.fixed && /^[+-]?[0-9]+$/.test(w.value)));
    if (operand)
      return ask(
        `[[ ${args[i]!.value} ]] evaluates ${operand.raw} as arithmetic, and a variable's value there can run commands`,
      );
  }
  return SAFE;
}

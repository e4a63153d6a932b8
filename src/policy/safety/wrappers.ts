/**
 * Commands that run the command in their arguments (env, nice, timeout, stdbuf, command, time,
 * exec, xargs): each finds where the inner command starts, refusing options it does not know.
 */

import type { Word } from "../../util/shell-ast.ts";
import { computed, type OptionSpec, type ParsedArgs, scanLong, scanShort } from "./options.ts";
import { checkVariable } from "./variables.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

export type Unwrapped = { inner: Word[] } | Safety;

/** Commands that run the command given in their arguments. */
export const WRAPPERS: Readonly<Record<string, (args: Word[], cmd: string) => Unwrapped>> = {
  env: envWrapper,
  nice: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "n",
        longValue: ["adjustment"],
        only: ["-n", "--adjustment", ..."0123456789".split("").map((d) => `-${d}`)],
      },
      0,
    ),
  timeout: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "ks",
        longValue: ["kill-after", "signal"],
        only: ["-k", "-s", "-v", "--kill-after", "--signal", "--foreground", "--preserve-status", "--verbose"],
      },
      1,
    ),
  stdbuf: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "ioe",
        longValue: ["input", "output", "error"],
        only: ["-i", "-o", "-e", "--input", "--output", "--error"],
      },
      0,
    ),
  command: commandWrapper,
  time: (args, cmd) => onlyFlags(args, cmd, new Set(["-p"])),
  exec: (args, cmd) => onlyFlags(args, cmd, new Set()),
  xargs: (args, cmd) => afterOptions(args, cmd, XARGS, 0),
};

/** Where the command starts after a wrapper's options; those options must all be in `spec.only`. */
function leadingOptions(args: readonly Word[], cmd: string, spec: OptionSpec): number | Safety {
  let i = 0;
  while (i < args.length) {
    const w = args[i] as Word;
    if (!w.fixed) return w.mayBeOption ? computed(w, cmd) : i;
    if (w.value === "--") return i + 1;
    if (w.value === "-" || !w.value.startsWith("-")) return i;
    const out: ParsedArgs = { positionals: [], options: [] };
    const r = w.value.startsWith("--") ? scanLong(cmd, w.value, spec, out) : scanShort(cmd, w.value, spec, out);
    if (typeof r !== "string") return r;
    i += r === "next" ? 2 : 1;
  }
  return i;
}

/** Options, then `skip` positionals (timeout's duration), then the command. */
function afterOptions(args: Word[], cmd: string, spec: OptionSpec, skip: number): Unwrapped {
  const i = leadingOptions(args, cmd, spec);
  if (typeof i !== "number") return i;
  if (args.length - i < skip) return ask(`${cmd} without a command is not understood`);
  return { inner: args.slice(i + skip) };
}

function onlyFlags(args: Word[], cmd: string, flags: ReadonlySet<string>): Unwrapped {
  let i = 0;
  for (; i < args.length && (args[i] as Word).value.startsWith("-"); i++) {
    const w = args[i] as Word;
    if (!w.fixed || !flags.has(w.value)) return ask(`${cmd} ${w.raw} is not understood`);
  }
  return { inner: args.slice(i) };
}

/** `env [-i] [-u NAME] [NAME=VALUE]... [command]`; other options (-S, -C) ask. */
function envWrapper(args: Word[]): Unwrapped {
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed) return computed(w, "env");
    const v = w.value;
    if (["-i", "--ignore-environment", "-", "-0", "--null"].includes(v) || v.startsWith("--unset=") || /^-u./.test(v))
      continue;
    if (v === "-u" || v === "--unset") {
      i++;
      continue;
    }
    if (v === "--") return { inner: args.slice(i + 1) };
    if (v.startsWith("-")) return ask(`env ${v} is not understood`);
    const assign = /^([^=]+)=/.exec(v);
    if (!assign?.[1]) break;
    const ok = checkVariable(assign[1], w);
    if (!ok.safe) return ok;
  }
  return { inner: args.slice(i) };
}

/** `command -v/-V NAME` only looks up; `command [-p] CMD` runs CMD. */
function commandWrapper(args: Word[]): Unwrapped {
  let i = 0;
  for (; i < args.length && (args[i] as Word).value.startsWith("-"); i++) {
    const w = args[i] as Word;
    if (w.fixed && w.value === "--") return { inner: args.slice(i + 1) };
    if (!w.fixed || !/^-[pvV]+$/.test(w.value)) return ask(`command ${w.raw} is not understood`);
    if (/[vV]/.test(w.value)) return SAFE;
  }
  return { inner: args.slice(i) };
}

/** GNU xargs options; -e, -i and -l take only an attached value. */
const XARGS: OptionSpec = {
  shortValue: "adEILnPs",
  shortAttached: "eil",
  longValue: ["arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars"],
  only: [
    ..."0adEeIiLlnPprstxo".split("").map((c) => `-${c}`),
    ...[
      "null",
      "arg-file",
      "delimiter",
      "eof",
      "replace",
      "max-lines",
      "max-args",
      "max-procs",
      "interactive",
      "no-run-if-empty",
      "max-chars",
      "verbose",
      "exit",
      "open-tty",
      "show-limits",
    ].map((o) => `--${o}`),
  ],
};

/**
 * The option scanner: reads a command's arguments as getopt would, refusing an option that would
 * make it write or run something, and a computed word that may be an option.
 */

import type { Word } from "../../util/shell-ast.ts";
import { ask, type Safety } from "./verdict.ts";

export interface OptionSpec {
  /** Options that write or run something, with what they do. Long names also match abbreviations. */
  deny?: Readonly<Record<string, string>>;
  /**
   * Short options whose value is the rest of the word or the next word. List only letters sure to
   * take a value: a missing letter makes approval stricter, a wrong one could hide an option.
   */
  shortValue?: string;
  /** Short options whose optional value can only be attached (`-i.bak`, `-I{}`): never the next word. */
  shortAttached?: string;
  /** Long options whose value may be the next word (when written without `=`). */
  longValue?: readonly string[];
  /** When set, every other option asks: for wrappers, whose unknown options could run something. */
  only?: readonly string[];
}

export interface ParsedArgs {
  /** Arguments that are not options, computed ones included. */
  positionals: Word[];
  /** The options seen, as written up to `=` (`-o`, `--output`), with their values. */
  options: Array<{ name: string; value?: string }>;
}

export const computed = (w: Word, cmd: string): Safety =>
  ask(`relay cannot check the computed argument ${w.raw} of ${cmd}`);

/** Reads `args` as getopt would, refusing a denied option or a computed word that may be one. */
export function scanArgs(cmd: string, args: readonly Word[], spec: OptionSpec): ParsedArgs | Safety {
  const out: ParsedArgs = { positionals: [], options: [] };
  let optionsDone = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed && w.mayBeOption) return computed(w, cmd);
    const v = w.value;
    if (!w.fixed || optionsDone || v === "-" || !v.startsWith("-")) {
      out.positionals.push(w);
      continue;
    }
    if (v === "--") {
      optionsDone = true;
      continue;
    }
    const r = v.startsWith("--") ? scanLong(cmd, v, spec, out) : scanShort(cmd, v, spec, out);
    if (typeof r !== "string") return r;
    if (r === "next") {
      const value = args[++i];
      if (value && !value.fixed && value.mayBeOption) return computed(value, cmd);
      const last = out.options.at(-1);
      if (last && value) last.value = value.value;
    }
  }
  return out;
}

/** "next" when the option's value is the next word. */
export function scanLong(cmd: string, v: string, spec: OptionSpec, out: ParsedArgs): Safety | "next" | "done" {
  const eq = v.indexOf("=");
  const name = eq === -1 ? v.slice(2) : v.slice(2, eq);
  for (const [denied, what] of Object.entries(spec.deny ?? {})) {
    if (denied.startsWith("--") && denied.slice(2).startsWith(name)) return ask(`${cmd} ${denied} ${what}`);
  }
  if (spec.only && !spec.only.includes(`--${name}`)) return ask(`${cmd} --${name} is not understood`);
  out.options.push({ name: `--${name}`, ...(eq === -1 ? {} : { value: v.slice(eq + 1) }) });
  return eq === -1 && spec.longValue?.includes(name) ? "next" : "done";
}

export function scanShort(cmd: string, v: string, spec: OptionSpec, out: ParsedArgs): Safety | "next" | "done" {
  for (let j = 1; j < v.length; j++) {
    const letter = v.charAt(j);
    const what = spec.deny?.[`-${letter}`];
    if (what !== undefined) return ask(`${cmd} -${letter} ${what}`);
    if (spec.only && !spec.only.includes(`-${letter}`)) return ask(`${cmd} -${letter} is not understood`);
    const rest = v.slice(j + 1);
    if (spec.shortAttached?.includes(letter)) {
      out.options.push({ name: `-${letter}`, ...(rest ? { value: rest } : {}) });
      return "done";
    }
    if (spec.shortValue?.includes(letter)) {
      out.options.push({ name: `-${letter}`, ...(rest ? { value: rest } : {}) });
      return rest ? "done" : "next";
    }
    out.options.push({ name: `-${letter}` });
  }
  return "done";
}

export function isSafety(r: ParsedArgs | Safety): r is Safety {
  return "safe" in r;
}

export const has = (p: ParsedArgs, ...names: string[]): boolean => p.options.some((o) => names.includes(o.name));

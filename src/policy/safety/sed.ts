/** sed's named check: a script may write (`w`, `s///w`) or run (`e`, `s///e`); this reads it to tell. */

import { has, type ParsedArgs } from "./options.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

export function sedCheck(p: ParsedArgs): Safety {
  const scripts = p.options.filter((o) => o.name === "-e" || o.name === "--expression").map((o) => o.value);
  if (scripts.length === 0) {
    const script = p.positionals[0];
    if (!script) return ask("sed without a script is not understood");
    if (!script.fixed) return ask(`relay cannot check the computed sed script ${script.raw}`);
    scripts.push(script.value);
  }
  if (has(p, "--sandbox")) return SAFE;
  for (const s of scripts) {
    if (s === undefined) return ask("relay cannot check a computed sed script");
    const why = sedScriptProblem(s);
    if (why) return ask(`sed ${why}`);
  }
  return SAFE;
}

/** Why a sed script may write or run something (w, W, e, s///w, s///e), or undefined if it cannot. */
export function sedScriptProblem(script: string): string | undefined {
  const s = new SedReader(script);
  for (;;) {
    s.skipSpace(true);
    if (!s.more()) return undefined;
    s.address();
    const why = sedCommand(s.next(), s);
    if (why) return why;
  }
}

function sedCommand(c: string, s: SedReader): string | undefined {
  if ("{}".includes(c) || "pPdDnNgGhHxz=F".includes(c)) return undefined;
  if ("qQlL".includes(c)) return s.skip(/^\s*[0-9]*/);
  if ("#:btTv".includes(c) || "aicrR".includes(c)) return s.skipLine(c);
  if (c === "s") return s.substitute();
  if (c === "y") return s.delimited(2) ? undefined : "y command is not understood";
  if (c === "w" || c === "W") return `${c} writes a file`;
  if (c === "e") return "e runs a command";
  return `command ${JSON.stringify(c)} is not understood`;
}

/** A cursor over a sed script. */
class SedReader {
  private i = 0;
  constructor(private readonly s: string) {}

  more(): boolean {
    return this.i < this.s.length;
  }

  next(): string {
    return this.s.charAt(this.i++);
  }

  skip(re: RegExp): undefined {
    this.i += re.exec(this.s.slice(this.i))?.[0].length ?? 0;
    return undefined;
  }

  skipSpace(separators: boolean): void {
    this.skip(separators ? /^[\s;]*/ : /^[ \t]*/);
  }

  /** Labels run to `;` or the line's end; comments and text to the line's end (`a\` text may continue). */
  skipLine(c: string): undefined {
    if ("btTv:".includes(c)) return this.skip(/^[^;\n}]*/);
    return this.skip(c === "#" ? /^[^\n]*/ : /^(\\\n|[^\n\\]|\\[^\n])*/);
  }

  /** `[addr[,addr]][!]`; addresses are numbers, `$`, `first~step`, `+N`, `/re/` or `\cREc`. */
  address(): void {
    for (let part = 0; part < 2; part++) {
      this.skip(/^[0-9]+(~[0-9]+)?|^\$|^[+~][0-9]+/);
      const c = this.s.charAt(this.i);
      if (c === "/" || c === "\\") {
        if (c === "\\") this.i++;
        this.until(this.next());
        this.skip(/^[IM]*/);
      }
      this.skipSpace(false);
      if (this.s.charAt(this.i) !== ",") break;
      this.i++;
      this.skipSpace(false);
    }
    this.skip(/^[\s!]*/);
  }

  /** Reads past the next unescaped `delim`; false if it never comes. */
  until(delim: string): boolean {
    while (this.more()) {
      const c = this.next();
      if (c === "\\") this.i++;
      else if (c === delim) return true;
    }
    return false;
  }

  delimited(parts: number): boolean {
    const delim = this.next();
    if (delim === "" || delim === "\n" || delim === "\\") return false;
    for (let k = 0; k < parts; k++) if (!this.until(delim)) return false;
    return true;
  }

  /** After `s`: pattern, replacement and flags; the w and e flags write or run. */
  substitute(): string | undefined {
    if (!this.delimited(2)) return "s command is not understood";
    for (;;) {
      const f = this.s.charAt(this.i);
      if (f === "w") return "s///w writes a file";
      if (f === "e") return "s///e runs a command";
      if (f === "" || !/[gpiImM0-9]/.test(f)) return undefined;
      this.i++;
    }
  }
}

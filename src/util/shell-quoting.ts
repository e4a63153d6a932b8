/** Quoting rules both shell parsers share: `$'...'` escapes and the body of a backtick substitution. */
import { ShellParseError } from "./shell-ast.ts";

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** The text of `$'...'` (between the quotes) with its backslash escapes decoded. */
export function decodeAnsiC(body: string): string {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body.charAt(i);
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = body.charAt(++i);
    const known = SIMPLE_ESCAPES[e];
    if (known !== undefined) {
      out += known;
      continue;
    }
    const rest = body.slice(i + 1);
    const digits = (re: RegExp): string => re.exec(rest)?.[0] ?? "";
    if (e === "x" || e === "u" || e === "U") {
      const hex = digits(e === "x" ? /^[0-9a-fA-F]{1,2}/ : e === "u" ? /^[0-9a-fA-F]{1,4}/ : /^[0-9a-fA-F]{1,8}/);
      out += hex ? String.fromCodePoint(parseInt(hex, 16)) : `\\${e}`;
      i += hex.length;
    } else if (/[0-7]/.test(e)) {
      const more = digits(/^[0-7]{0,2}/);
      out += String.fromCharCode(parseInt(e + more, 8) & 0xff);
      i += more.length;
    } else if (e === "c") throw new ShellParseError("$'\\c' control escapes are not analysed");
    else out += `\\${e}`;
  }
  return out;
}

/** A backtick substitution's body as bash parses it: `\$`, `` \` ``, `\\` (and `\"` inside "...") unescaped. */
export function unescapeBackticks(body: string, inDouble: boolean): string {
  return body.replace(/\\([$`\\"])/g, (m, c: string) => (c !== '"' || inDouble ? c : m));
}

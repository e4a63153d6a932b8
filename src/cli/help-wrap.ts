/**
 * Help pages fit the terminal (80 columns without one): commander wraps option descriptions
 * only when their column leaves room, and the text after them is ours, written for ~96. Prose
 * is reflowed paragraph by paragraph; a table row (a term, two spaces, a description) is wrapped
 * under its description. Lines that fit are left exactly as written.
 */

/** The width help is written for: the terminal's, or 80 (pipes, files, `less`). */
export function helpWidth(): number {
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  return columns && columns >= 40 ? columns : 80;
}

export function wrapHelpText(text: string, width: number): string {
  const lines = unquoteDefaults(text).split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    const para = proseRun(lines, i);
    if (para.length > 1 && para.some((l) => l.length > width)) {
      out.push(...fill(para.map((l) => l.trim()).join(" "), indentOf(para[0]!), indentOf(para[0]!), width));
      i += para.length;
      continue;
    }
    out.push(...wrapLine(lines[i]!, width));
    i++;
  }
  return out.join("\n");
}

const indentOf = (line: string) => /^ */.exec(line)![0].length;
/** A table row: a term, then two or more spaces, then its description. */
const termOf = (line: string) => /^( *\S.*?\S? {2,})\S/.exec(line)?.[1];

/** The prose lines from `start`: unindented (indented ones are lists and examples), not blank, no table row. */
function proseRun(lines: string[], start: number): string[] {
  const first = lines[start]!;
  if (first.trim() === "" || termOf(first) || indentOf(first) > 0) return [first];
  const run = [first];
  for (let j = start + 1; j < lines.length; j++) {
    const l = lines[j]!;
    if (l.trim() === "" || termOf(l) || indentOf(l) !== indentOf(first)) break;
    run.push(l);
  }
  return run;
}

function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const term = termOf(line);
  // Under its description, unless the term leaves it too narrow a column.
  const indent = indentOf(line);
  const hang = term && term.length <= width - 30 ? term.length : indent === 0 ? 0 : indent + 4;
  const head = term ?? " ".repeat(indentOf(line));
  return fill(line.slice(head.length), head.length, hang, width, head);
}

/**
 * Greedy fill of `text`: the first line after `lead` (or `first` spaces), the rest after `next`
 * spaces. A word too long for any line breaks after its commas (`MODEL[,provider=P][,…]`).
 */
function fill(text: string, first: number, next: number, width: number, lead = " ".repeat(first)): string[] {
  const out: string[] = [];
  let line = lead;
  let empty = true;
  for (const { piece, glued } of pieces(text, width - next)) {
    if (!empty && line.length + (glued ? 0 : 1) + piece.length > width) {
      out.push(line);
      line = " ".repeat(next);
      empty = true;
    }
    line += empty || glued ? piece : ` ${piece}`;
    empty = false;
  }
  out.push(line);
  return out;
}

/** The words of `text`; one longer than `room` as its comma-ended parts, glued to each other. */
function pieces(text: string, room: number): Array<{ piece: string; glued: boolean }> {
  return text
    .split(/\s+/)
    .filter(Boolean)
    .flatMap((word) =>
      word.length > room
        ? word.split(/(?<=,)/).map((piece, i) => ({ piece, glued: i > 0 }))
        : [{ piece: word, glued: false }],
    );
}

/** commander prints string defaults and choices as JSON (`(default: "30m")`); people read them bare. */
function unquoteDefaults(text: string): string {
  return text.replace(/\((?:default|choices|preset):[^()]*\)/g, (group) => group.replace(/"([^"\n]*)"/g, "$1"));
}

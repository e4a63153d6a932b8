/**
 * A small Markdown renderer for the page (a deliverable's README, notes): headings, paragraphs,
 * lists (across blank lines, with paragraphs and code under an item), quotes, fenced, indented
 * and inline code, emphasis, links and rules. Safe by construction: every piece of text is
 * HTML-escaped before any tag is added, raw HTML in the source stays text, and a link is kept
 * only when it is http(s), mailto or a relative path (no javascript:, data:, …).
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The link target if it is safe to follow, else undefined (the link shows as text). */
export function safeHref(url: string): string | undefined {
  // Browsers ignore control characters and spaces in a scheme ("java\tscript:"): judge without them.
  const bare = url.replace(/[\u0000-\u0020\u007f]/g, "");
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(bare)?.[1]?.toLowerCase();
  if (scheme === undefined) return bare.startsWith("//") ? undefined : url;
  return scheme === "http" || scheme === "https" || scheme === "mailto" ? url : undefined;
}

/** Inline markup of one already-split piece of text: code spans first, then links and emphasis on escaped text. */
function inline(text: string): string {
  const out: string[] = [];
  const parts = text.split(/(`[^`]+`)/);
  for (const p of parts) {
    if (p.length > 1 && p.startsWith("`") && p.endsWith("`")) {
      out.push(`<code>${escapeHtml(p.slice(1, -1))}</code>`);
      continue;
    }
    out.push(links(p));
  }
  return out.join("");
}

function links(text: string): string {
  const re = /\[([^\]]*)\]\(([^)\s]*)\)/g;
  let out = "";
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out += emphasis(escapeHtml(text.slice(last, m.index)));
    const href = safeHref(m[2]!);
    const label = emphasis(escapeHtml(m[1]!));
    out +=
      href === undefined
        ? label
        : `<a href="${escapeHtml(href)}" rel="noopener noreferrer nofollow" target="_blank">${label}</a>`;
    last = m.index + m[0].length;
  }
  return out + emphasis(escapeHtml(text.slice(last)));
}

/** Bold and italic over text that is already escaped (the markers are not special to HTML). */
function emphasis(escaped: string): string {
  return escaped
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>");
}

/** A list item's parts: its text, then the paragraphs and code blocks indented under it. */
type Part = { kind: "p"; text: string } | { kind: "code"; lines: string[]; base: number };

interface List {
  kind: "ul" | "ol";
  /** The first item's number (an ordered list that a fence cut in two goes on counting). */
  start: number;
  items: Part[][];
  /** The last item's marker column and the column its text starts at. */
  marker: number;
  indent: number;
  /** Blank lines since the last line of the list: the list may go on after them. */
  blanks: number;
}

type Block =
  | { kind: "p" | "quote"; lines: string[] }
  | List
  /** `indent`: the opening fence's; its lines lose as much leading white space (a fence in a list item). */
  | { kind: "code"; lines: string[]; indent: number }
  | { kind: "indented"; lines: string[] };

/** A line of an indented code block: four spaces or a tab, then the code. */
const INDENTED = /^(?: {4}|\t)(.*)$/;
const BULLET = /^(\s*)([-*+]\s+)(.*)$/;
const NUMBERED = /^(\s*)(\d+)([.)]\s+)(.*)$/;

/** The columns `s` takes at the start of a line (a tab to the next multiple of 4). */
function width(s: string): number {
  let col = 0;
  for (const c of s) col += c === "\t" ? 4 - (col % 4) : 1;
  return col;
}

/** The columns of a line's leading white space. */
const columns = (line: string) => width(/^[ \t]*/.exec(line)![0]);

/** The line without up to `n` columns of its leading white space. */
function dedent(line: string, n: number): string {
  let col = 0;
  let i = 0;
  for (; i < line.length && col < n && (line[i] === " " || line[i] === "\t"); i++)
    col += line[i] === "\t" ? 4 - (col % 4) : 1;
  return " ".repeat(Math.max(0, col - n)) + line.slice(i);
}

/** Code lines without the blank ones at the end (they belong to the gap after the block). */
const pre = (lines: string[]) =>
  `<pre><code>${escapeHtml(lines.slice(0, lines.findLastIndex((l) => l !== "") + 1).join("\n"))}</code></pre>`;

function listHtml(b: List): string {
  const li = (parts: Part[]) =>
    parts
      .map((p, i) => (p.kind === "code" ? pre(p.lines) : i === 0 ? inline(p.text) : `<p>${inline(p.text)}</p>`))
      .join("");
  const start = b.kind === "ol" && b.start !== 1 ? ` start="${b.start}"` : "";
  return `<${b.kind}${start}>${b.items.map((i) => `<li>${li(i)}</li>`).join("")}</${b.kind}>`;
}

/** The blocks of a document, built a line at a time; `html` holds those already closed. */
class Blocks {
  readonly html: string[] = [];
  private block: Block | undefined;

  /** Closes the open block, if any, as HTML. */
  flush(): void {
    const b = this.block;
    this.block = undefined;
    if (!b) return;
    if (b.kind === "p") this.html.push(`<p>${inline(b.lines.join(" "))}</p>`);
    else if (b.kind === "quote") this.html.push(`<blockquote><p>${inline(b.lines.join(" "))}</p></blockquote>`);
    else if (b.kind === "ul" || b.kind === "ol") this.html.push(listHtml(b));
    else if (b.kind === "code" || b.kind === "indented") this.html.push(pre(b.lines));
  }

  line(line: string): void {
    if (this.list(line) || this.code(line) || this.leaf(line) || this.container(line)) return;
    const b = this.block;
    const last = b?.kind === "ul" || b?.kind === "ol" ? b.items.at(-1)!.at(-1)! : undefined;
    if (last?.kind === "p") {
      // A lazy continuation line of the last item's text.
      last.text += ` ${line.trim()}`;
      return;
    }
    if (this.block?.kind !== "p") this.open({ kind: "p", lines: [] });
    (this.block as { lines: string[] }).lines.push(line.trim());
  }

  private open(b: Block): void {
    this.flush();
    this.block = b;
  }

  /**
   * Inside a list: a blank line (the list may go on after it), or a line indented under the last
   * item. Indented four columns past the marker after a blank line, it is code (as at the top
   * level: a "How to verify" step's commands); less, it is the item's text or another paragraph
   * of it. A line less indented than the item's text after a blank line ends the list.
   */
  private list(line: string): boolean {
    const b = this.block;
    if ((b?.kind !== "ul" && b?.kind !== "ol") || /^\s*```/.test(line)) return false;
    if (!line.trim()) {
      b.blanks++;
      return true;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) return false;
    const parts = b.items.at(-1)!;
    const last = parts.at(-1)!;
    const col = columns(line);
    if (last.kind === "code" ? col >= last.base : col >= b.marker + 4 && b.blanks > 0) {
      if (last.kind === "code") last.lines.push(...Array<string>(b.blanks).fill(""), dedent(line, last.base));
      else parts.push({ kind: "code", lines: [dedent(line, col)], base: col });
    } else if (col >= b.indent && (b.blanks > 0 || last.kind === "code")) parts.push({ kind: "p", text: line.trim() });
    else if (b.blanks > 0) {
      this.flush();
      return false;
    } else return false;
    b.blanks = 0;
    return true;
  }

  /** Code: inside a fence or an indented block, or a line that starts one. */
  private code(line: string): boolean {
    const b = this.block;
    if (b?.kind === "code") {
      if (/^\s*```/.test(line)) this.flush();
      else b.lines.push(dedent(line, b.indent));
      return true;
    }
    const indented = INDENTED.exec(line);
    // Blank lines stay inside an indented block; the first line that is not indented ends it.
    if (b?.kind === "indented" && (indented || !line.trim())) {
      b.lines.push(indented ? indented[1]! : "");
      return true;
    }
    if (b?.kind === "indented") this.flush();
    if (/^\s*```/.test(line)) {
      this.open({ kind: "code", lines: [], indent: columns(line) });
      return true;
    }
    // Indented code starts where no paragraph or list goes on (there an indented line continues it).
    if (!indented || this.block !== undefined || !line.trim()) return false;
    this.open({ kind: "indented", lines: [indented[1]!] });
    return true;
  }

  /** A blank line, a heading or a rule: each closes the open block. */
  private leaf(line: string): boolean {
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    const rule = /^\s*([-*_])(\s*\1){2,}\s*$/.test(line);
    if (line.trim() && !heading && !rule) return false;
    this.flush();
    if (heading) this.html.push(`<h${heading[1]!.length}>${inline(heading[2]!)}</h${heading[1]!.length}>`);
    if (rule) this.html.push("<hr>");
    return true;
  }

  /** A list item or a quote line, added to the list or quote open, or starting one. */
  private container(line: string): boolean {
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    if (bullet || numbered) {
      const kind = bullet ? "ul" : "ol";
      const [lead, mark, text] = bullet
        ? [bullet[1]!, bullet[2]!, bullet[3]!]
        : [numbered![1]!, numbered![2]! + numbered![3]!, numbered![4]!];
      if (this.block?.kind !== kind)
        this.open({ kind, start: numbered ? Number(numbered[2]) : 1, items: [], marker: 0, indent: 0, blanks: 0 });
      const b = this.block as List;
      b.items.push([{ kind: "p", text }]);
      b.marker = columns(lead);
      b.indent = width(lead + mark);
      b.blanks = 0;
      return true;
    }
    const quote = /^\s*>\s?(.*)$/.exec(line);
    if (!quote) return false;
    if (this.block?.kind !== "quote") this.open({ kind: "quote", lines: [] });
    (this.block as { lines: string[] }).lines.push(quote[1]!);
    return true;
  }
}

export function renderMarkdown(source: string): string {
  const blocks = new Blocks();
  for (const line of source.replace(/\r\n?/g, "\n").split("\n")) blocks.line(line);
  blocks.flush();
  return blocks.html.join("\n");
}

/**
 * A small Markdown renderer for the page (a deliverable's README, notes): headings, paragraphs,
 * lists, quotes, fenced and inline code, emphasis, links and rules. Safe by construction: every
 * piece of text is HTML-escaped before any tag is added, raw HTML in the source stays text, and
 * a link is kept only when it is http(s), mailto or a relative path (no javascript:, data:, …).
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
    out += href === undefined ? label : `<a href="${escapeHtml(href)}" rel="noopener noreferrer nofollow" target="_blank">${label}</a>`;
    last = m.index + m[0].length;
  }
  return out + emphasis(escapeHtml(text.slice(last)));
}

/** Bold and italic over text that is already escaped (the markers are not special to HTML). */
function emphasis(escaped: string): string {
  return escaped.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>").replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>");
}

type Block =
  | { kind: "p"; lines: string[] }
  | { kind: "quote"; lines: string[] }
  | { kind: "ul"; items: string[] }
  | { kind: "ol"; items: string[] }
  | { kind: "code"; lines: string[] }
  | { kind: "indented"; lines: string[] };

/** A line of an indented code block: four spaces or a tab, then the code. */
const INDENTED = /^(?: {4}|\t)(.*)$/;

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
    else if (b.kind === "ul" || b.kind === "ol") this.html.push(`<${b.kind}>${b.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${b.kind}>`);
    else {
      // An indented block's blank lines at its end belong to the gap after it.
      const lines = b.kind === "indented" ? b.lines.slice(0, b.lines.findLastIndex((l) => l !== "") + 1) : b.lines;
      this.html.push(`<pre><code>${escapeHtml(lines.join("\n"))}</code></pre>`);
    }
  }

  line(line: string): void {
    if (this.code(line) || this.leaf(line) || this.container(line)) return;
    if (this.block?.kind === "ul" || this.block?.kind === "ol") {
      // A continuation line of the last item.
      this.block.items[this.block.items.length - 1] += ` ${line.trim()}`;
      return;
    }
    if (this.block?.kind !== "p") this.open({ kind: "p", lines: [] });
    (this.block as { lines: string[] }).lines.push(line.trim());
  }

  private open(b: Block): void {
    this.flush();
    this.block = b;
  }

  /** Code: inside a fence or an indented block, or a line that starts one. */
  private code(line: string): boolean {
    const b = this.block;
    if (b?.kind === "code") {
      if (/^\s*```/.test(line)) this.flush();
      else b.lines.push(line);
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
      this.open({ kind: "code", lines: [] });
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
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const item = bullet ?? /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (item) {
      const kind = bullet ? "ul" : "ol";
      if (this.block?.kind !== kind) this.open({ kind, items: [] });
      (this.block as { items: string[] }).items.push(item[1]!);
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

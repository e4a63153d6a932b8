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

type Block = { kind: "p" | "quote"; lines: string[] } | { kind: "ul" | "ol"; items: string[] } | { kind: "code" | "indented"; lines: string[] };

/** A line of an indented code block: four spaces or a tab, then the code. */
const INDENTED = /^(?: {4}|\t)(.*)$/;

export function renderMarkdown(source: string): string {
  const html: string[] = [];
  let block: Block | undefined;
  const flush = () => {
    if (!block) return;
    if (block.kind === "p") html.push(`<p>${inline(block.lines.join(" "))}</p>`);
    else if (block.kind === "quote") html.push(`<blockquote><p>${inline(block.lines.join(" "))}</p></blockquote>`);
    else if (block.kind === "code") html.push(`<pre><code>${escapeHtml(block.lines.join("\n"))}</code></pre>`);
    else if (block.kind === "indented") {
      while (block.lines.at(-1) === "") block.lines.pop();
      html.push(`<pre><code>${escapeHtml(block.lines.join("\n"))}</code></pre>`);
    }
    else if (block.kind === "ul" || block.kind === "ol") html.push(`<${block.kind}>${block.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${block.kind}>`);
    block = undefined;
  };
  for (const line of source.replace(/\r\n?/g, "\n").split("\n")) {
    if (block?.kind === "code") {
      if (/^\s*```/.test(line)) flush();
      else block.lines.push(line);
      continue;
    }
    if (block?.kind === "indented") {
      // Blank lines stay inside an indented block; the first line that is not indented ends it.
      const more = INDENTED.exec(line);
      if (more || !line.trim()) {
        block.lines.push(more ? more[1]! : "");
        continue;
      }
      flush();
    }
    if (/^\s*```/.test(line)) {
      flush();
      block = { kind: "code", lines: [] };
      continue;
    }
    // Indented code starts where no paragraph or list goes on (there an indented line continues it).
    const indented = block === undefined && line.trim() ? INDENTED.exec(line) : null;
    if (indented) {
      block = { kind: "indented", lines: [indented[1]!] };
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      const n = heading[1]!.length;
      html.push(`<h${n}>${inline(heading[2]!)}</h${n}>`);
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      html.push("<hr>");
      continue;
    }
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    const item = bullet ?? numbered;
    if (item) {
      const kind = bullet ? "ul" : "ol";
      if (block?.kind !== kind) {
        flush();
        block = { kind, items: [] };
      }
      (block as { items: string[] }).items.push(item[1]!);
      continue;
    }
    const quote = /^\s*>\s?(.*)$/.exec(line);
    if (quote) {
      if (block?.kind !== "quote") {
        flush();
        block = { kind: "quote", lines: [] };
      }
      block.lines.push(quote[1]!);
      continue;
    }
    if (block?.kind === "ul" || block?.kind === "ol") {
      // A continuation line of the last item.
      block.items[block.items.length - 1] += ` ${line.trim()}`;
      continue;
    }
    if (block?.kind !== "p") {
      flush();
      block = { kind: "p", lines: [] };
    }
    block.lines.push(line.trim());
  }
  flush();
  return html.join("\n");
}

/** The page's Markdown renderer: the usual blocks and spans, and nothing from the source ever becomes markup or a script link. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { escapeHtml, renderMarkdown, safeHref } from "../../../src/infty/serve/page/markdown.ts";

describe("page markdown", () => {
  test("headings, paragraphs, lists, code, emphasis, links, quotes, rules", () => {
    const html = renderMarkdown(
      "# Title\n\nSome **bold** and *it* text\nwrapped.\n\n- a\n- `b`\n\n1. one\n2. two\n\n```\nx < y\n```\n\n> quoted\n\n---\n[site](https://example.com/a?b=1&c=2)",
    );
    assert.equal(
      html,
      [
        "<h1>Title</h1>",
        "<p>Some <strong>bold</strong> and <em>it</em> text wrapped.</p>",
        "<ul><li>a</li><li><code>b</code></li></ul>",
        "<ol><li>one</li><li>two</li></ol>",
        "<pre><code>x &lt; y</code></pre>",
        "<blockquote><p>quoted</p></blockquote>",
        "<hr>",
        '<p><a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">site</a></p>',
      ].join("\n"),
    );
  });

  test("raw HTML stays text; javascript:, data: and protocol-relative links are not links", () => {
    const html = renderMarkdown(
      '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n[a](javascript:alert(3)) [b](JaVa\tScRiPt:alert(4)) [c](data:text/html,x) [d](//evil.example) [e](vbscript:x)\n\n# <b onclick="x">h</b>\n\n`<i>`',
    );
    assert.doesNotMatch(html, /<script|<img|<b |<i>|href="(javascript|data|vbscript|\/\/)/i);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /&lt;img src=x onerror=&quot;alert\(2\)&quot;&gt;/);
    assert.doesNotMatch(html, /<a /);
    assert.equal(safeHref("notes.md"), "notes.md");
    assert.equal(safeHref(" javascript:alert(1)"), undefined);
    assert.equal(escapeHtml(`<>&"'`), "&lt;&gt;&amp;&quot;&#39;");
  });

  test("a quote in a link target cannot open an attribute", () => {
    const html = renderMarkdown('[x](https://a.example/"onmouseover="alert(1))');
    assert.doesNotMatch(html, /"onmouseover=/);
  });

  test("an indented code block (four spaces or a tab) is code, line by line and escaped; an indented line still continues a list or a paragraph", () => {
    const html = renderMarkdown(
      "## How to verify\n\n    npm ci\n    npm test -- <all>\n\n\tnode check.mjs\n## Limitations\n\n- one item\n    continued here\n\nA paragraph\n    goes on.",
    );
    assert.equal(
      html,
      [
        "<h2>How to verify</h2>",
        "<pre><code>npm ci\nnpm test -- &lt;all&gt;\n\nnode check.mjs</code></pre>",
        "<h2>Limitations</h2>",
        "<ul><li>one item continued here</li></ul>",
        "<p>A paragraph goes on.</p>",
      ].join("\n"),
    );
  });

  test("a list goes on across blank lines: code indented under a step is the step's code, a less indented line another paragraph of the item", () => {
    const html = renderMarkdown(
      "## How to verify\n\n1. Install:\n\n    npm ci\n    npm run build\n\n2. Test:\n\n\tnpm test -- <all>\n\n        nested\n   and check the output.\n3. Done.\n\n- item\n\n  more of it\n\nAfter the list.",
    );
    assert.equal(
      html,
      [
        "<h2>How to verify</h2>",
        "<ol><li>Install:<pre><code>npm ci\nnpm run build</code></pre></li><li>Test:<pre><code>npm test -- &lt;all&gt;\n\n    nested</code></pre><p>and check the output.</p></li><li>Done.</li></ol>",
        "<ul><li>item<p>more of it</p></li></ul>",
        "<p>After the list.</p>",
      ].join("\n"),
    );
  });

  test("a fence in a list item loses the item's indent; the list after it counts on", () => {
    assert.equal(
      renderMarkdown("1. Run:\n   ```sh\n   npm ci\n     --quiet\n   ```\n2. Then <this>."),
      [
        "<ol><li>Run:</li></ol>",
        "<pre><code>npm ci\n  --quiet</code></pre>",
        '<ol start="2"><li>Then &lt;this&gt;.</li></ol>',
      ].join("\n"),
    );
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type PatchOp, parsePatch } from "../../../src/executor/patch/parse.ts";
import { errOf } from "../files/support.ts";

const patch = (...lines: string[]) => lines.join("\n");

/** Parsed operations without each hunk's `lines` (checked separately). */
function parsed(text: string): PatchOp[] {
  const r = parsePatch(text);
  if ("error" in r) assert.fail(r.error.message);
  return r.ok.map((op) =>
    op.kind === "update" ? { ...op, chunks: op.chunks.map(({ lines: _lines, ...c }) => c) } : op,
  ) as PatchOp[];
}

describe("parsePatch", () => {
  test("parses add, delete, update with move, context headers and End of File", () => {
    const ops = parsed(
      patch(
        "*** Begin Patch",
        "*** Add File: docs/new.md",
        "+# Title",
        "+",
        "+body",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def greet():",
        " context",
        "-print('hi')",
        "+print('hello')",
        "@@",
        "",
        "-last",
        "+final",
        "*** End of File",
        "*** End Patch",
      ),
    );
    assert.deepEqual(ops, [
      { kind: "add", path: "docs/new.md", contents: "# Title\n\nbody\n", line: 2 },
      { kind: "delete", path: "old.txt", line: 6 },
      {
        kind: "update",
        path: "src/app.py",
        movePath: "src/main.py",
        line: 7,
        chunks: [
          {
            context: "def greet():",
            oldLines: ["context", "print('hi')"],
            newLines: ["context", "print('hello')"],
            endOfFile: false,
            line: 9,
          },
          { oldLines: ["", "last"], newLines: ["", "final"], endOfFile: true, line: 13 },
        ],
      },
    ]);
  });

  test("hunk lines keep their kind and order; an empty line is blank context", () => {
    const r = parsePatch(
      ["*** Begin Patch", "*** Update File: a", "@@", " c", "-o", "+n", "", "*** End Patch"].join("\n"),
    );
    assert.ok("ok" in r && r.ok[0]?.kind === "update");
    assert.deepEqual(r.ok[0].chunks[0]?.lines, [
      { kind: " ", text: "c" },
      { kind: "-", text: "o" },
      { kind: "+", text: "n" },
      { kind: " ", text: "" }, // an empty line is an empty context line
    ]);
  });

  test("an empty Add File creates an empty file", () => {
    assert.deepEqual(parsed(patch("*** Begin Patch", "*** Add File: e.txt", "*** End Patch")), [
      { kind: "add", path: "e.txt", contents: "", line: 2 },
    ]);
  });

  test("is lenient about CRLF, surrounding blank lines, a heredoc wrapper and a missing first @@", () => {
    const text = [
      "",
      "<<'EOF'",
      "*** Begin Patch",
      "*** Update File: a.txt",
      " keep",
      "-x",
      "+y",
      "*** End Patch",
      "EOF",
      "",
    ].join("\r\n");
    const ops = parsed(text);
    assert.equal(ops.length, 1);
    const op = ops[0];
    assert.ok(op?.kind === "update");
    assert.deepEqual(op.chunks[0]?.oldLines, ["keep", "x"]);
    assert.deepEqual(op.chunks[0]?.newLines, ["keep", "y"]);
    assert.equal(op.chunks[0]?.context, undefined);
  });

  test("unified-diff line numbers in @@ headers are ignored, trailing text kept as context", () => {
    const ops = parsed(
      patch(
        "*** Begin Patch",
        "*** Update File: a",
        "@@ -10,3 +10,4 @@ class A:",
        "-a",
        "+b",
        "@@ -1 +1 @@",
        "-c",
        "+d",
        "*** End Patch",
      ),
    );
    const op = ops[0];
    assert.ok(op?.kind === "update");
    assert.equal(op.chunks[0]?.context, "class A:");
    assert.equal(op.chunks[1]?.context, undefined);
  });

  test("a context line that looks like a header is still content", () => {
    const ops = parsed(
      patch("*** Begin Patch", "*** Update File: a", "@@", " *** Add File: not-a-header", "-x", "+y", "*** End Patch"),
    );
    const op = ops[0];
    assert.ok(op?.kind === "update");
    assert.deepEqual(op.chunks[0]?.oldLines, ["*** Add File: not-a-header", "x"]);
  });

  const cases: [string, string, RegExp][] = [
    ["missing Begin", patch("*** Add File: a", "+x", "*** End Patch"), /line 1: expected "\*\*\* Begin Patch"/],
    ["missing End", patch("*** Begin Patch", "*** Add File: a", "+x"), /line 3: expected "\*\*\* End Patch"/],
    ["empty input", "  \n", /line 1: the patch is empty/],
    ["no operations", patch("*** Begin Patch", "*** End Patch"), /line 2: the patch contains no file operations/],
    [
      "Add line without +",
      patch("*** Begin Patch", "*** Add File: a.txt", "+ok", "oops", "*** End Patch"),
      /line 4: every line of the added file a.txt must start with "\+"/,
    ],
    [
      "unknown operation",
      patch("*** Begin Patch", "*** Rename File: a", "*** End Patch"),
      /line 2: expected a file operation/,
    ],
    [
      "update without hunks",
      patch("*** Begin Patch", "*** Update File: a.txt", "*** End Patch"),
      /line 2: Update File a.txt has no hunks/,
    ],
    [
      "bad hunk line",
      patch("*** Begin Patch", "*** Update File: a.txt", "@@", "-x", "?y", "*** End Patch"),
      /line 5: unexpected line in a hunk of a.txt.*"\?y"/,
    ],
    [
      "empty hunk",
      patch("*** Begin Patch", "*** Update File: a.txt", "@@", "@@", "-x", "*** End Patch"),
      /line 3: the hunk for a.txt has no lines/,
    ],
    [
      "missing path",
      patch("*** Begin Patch", "*** Delete File: ", "*** End Patch"),
      /line 2: Delete File needs a path/,
    ],
    [
      "lines after End of File",
      patch("*** Begin Patch", "*** Update File: a", "@@", "-x", "*** End of File", "+y", "*** End Patch"),
      /line 6: expected "@@"/,
    ],
  ];
  for (const [name, text, message] of cases) {
    test(`error: ${name}`, () => {
      const e = errOf(parsePatch(text), "invalid_patch");
      assert.match(e.message, message);
    });
  }
});

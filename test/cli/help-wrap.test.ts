/** Help pages fit the terminal: prose reflowed, table rows hung under their description, fitting lines untouched. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { wrapHelpText } from "../../src/cli/help-wrap.ts";
import { runRelayAsync } from "../support/self.ts";

describe("help wrapping", () => {
  test("prose is reflowed as a paragraph; a table row wraps under its description; short lines stay", () => {
    const text = [
      "Usage: relay x",
      "",
      "one two three four five six seven eight nine ten eleven twelve",
      "thirteen fourteen fifteen sixteen seventeen eighteen",
      "",
      "  -a, --all        every entry of the list, the hidden ones and the old ones included",
      "  short  line",
    ].join("\n");
    assert.deepEqual(wrapHelpText(text, 50).split("\n"), [
      "Usage: relay x",
      "",
      "one two three four five six seven eight nine ten",
      "eleven twelve thirteen fourteen fifteen sixteen",
      "seventeen eighteen",
      "",
      "  -a, --all        every entry of the list, the",
      "                   hidden ones and the old ones",
      "                   included",
      "  short  line",
    ]);
    assert.equal(wrapHelpText(text, 200), text, "lines that fit are left as written");
  });

  test("a word too long for any line breaks after its commas, without adding spaces", () => {
    assert.equal(
      wrapHelpText("  --m <spec>  MODEL[,provider=P][,base-url=URL][,effort=E]", 46),
      "  --m <spec>  MODEL[,provider=P][,\n              base-url=URL][,effort=E]",
    );
  });

  test("defaults and choices print without JSON quotes, also when commander broke the list over lines", () => {
    assert.equal(
      wrapHelpText(
        '  --every <i>  how often (default: "30m")\n  --p <p>  the API (choices:\n           "a-b", "c")',
        200,
      ),
      "  --every <i>  how often (default: 30m)\n  --p <p>  the API (choices:\n           a-b, c)",
    );
  });

  test("every help page of every command fits 80 columns without a terminal", async () => {
    const pages = [
      [],
      ["run"],
      ["infty"],
      ["infty", "run"],
      ["infty", "resume"],
      ["infty", "serve"],
      ["memories"],
      ["memories", "consolidate"],
      ["memories", "schedule"],
      ["sessions", "list"],
      ["doctor"],
      ["sandbox"],
      ["package", "build"],
      ["executor"],
      ["skills"],
      ["mcp"],
    ];
    const results = await Promise.all(pages.map((p) => runRelayAsync([...p, "--help"])));
    results.forEach((r, i) => {
      assert.equal(r.status, 0, r.stderr);
      const long = r.stdout.split("\n").filter((l) => l.length > 80);
      assert.deepEqual(long, [], `relay ${pages[i]!.join(" ")} --help`);
      assert.doesNotMatch(
        r.stdout,
        /\((default|choices):\s+"/,
        `relay ${pages[i]!.join(" ")} --help: a quoted default`,
      );
    });
  });

  test("a mistyped subcommand below the top level gets a did-you-mean too", async () => {
    const r = await runRelayAsync(["infty", "rn"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown command 'rn'\n\(Did you mean run\?\)/);
  });
});

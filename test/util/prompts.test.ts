/**
 * Prompts as Markdown: util/prompt-template.ts fills placeholders strictly, scripts/build-prompts.ts
 * reads a prompt file by its rules, and every committed src/<room>/prompts.generated.ts is what
 * the script makes of the room's prompts/*.md now.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import {
  promptRooms,
  promptsModulePath,
  promptsModuleSource,
  promptText,
  readPrompts,
  stringLiteral,
} from "../../scripts/build-prompts.ts";
import { fillPrompt, type PromptTemplate, placeholdersOf, strayBraces } from "../../src/util/prompt-template.ts";
import { REPO_ROOT } from "../support/paths.ts";

const greeting: PromptTemplate<"name" | "count"> = {
  source: "test/greeting.md",
  text: "Hello {{name}}, you have {{count}} notes, {{name}}.",
  placeholders: ["name", "count"],
};

describe("fillPrompt", () => {
  test("puts each value in every place its placeholder is, numbers as they print", () => {
    assert.equal(fillPrompt(greeting, { name: "Ada", count: 3 }), "Hello Ada, you have 3 notes, Ada.");
  });

  test("a value goes in as it is: no replacement patterns, no placeholders read in it", () => {
    assert.equal(
      fillPrompt(greeting, { name: "$& $1 $$ $'", count: "{{name}}" }),
      "Hello $& $1 $$ $', you have {{name}} notes, $& $1 $$ $'.",
    );
  });

  test("a missing value or one the prompt does not take is an error naming the file", () => {
    assert.throws(
      () => fillPrompt(greeting, { name: "Ada" } as unknown as { name: string; count: number }),
      /test\/greeting\.md: no value for \{\{count\}\}/,
    );
    assert.throws(
      () => fillPrompt(greeting, { name: "Ada", count: 1, extra: "x" } as { name: string; count: number }),
      /test\/greeting\.md: it has no placeholder \{\{extra\}\}/,
    );
    const broken: PromptTemplate<"a"> = { source: "test/broken.md", text: "{{a}} {{b}}", placeholders: ["a"] };
    assert.throws(() => fillPrompt(broken, { a: "x" }), /\{\{b\}\} is in its text but not in its placeholders/);
  });

  test("placeholders are found once each, in order; malformed braces are reported where they are", () => {
    assert.deepEqual(placeholdersOf("{{b}} {{a_1}} {{b}} { {x} } {{X}}"), ["b", "a_1"]);
    assert.deepEqual(strayBraces('{"a": 1} {{ok}}\nthen {{ name }} and }}'), ["2:6", "2:14", "2:21"]);
    assert.deepEqual(strayBraces('{"a": {"b": 1}} {{ok}}'), ["1:14"], "two closing braces of JSON are refused too");
  });
});

describe("scripts/build-prompts.ts", () => {
  test("a prompt is its file less the final newline; other endings, \\r and stray braces are refused", () => {
    assert.deepEqual(promptText("p.md", "# Title\nline\n"), { text: "# Title\nline" });
    assert.deepEqual(promptText("p.md", "a\n\nb\n"), { text: "a\n\nb" });
    assert.match((promptText("p.md", "no newline") as { error: string }).error, /does not end in a newline/);
    assert.match((promptText("p.md", "blank after\n\n") as { error: string }).error, /ends in a blank line/);
    assert.match((promptText("p.md", "\n") as { error: string }).error, /is empty/);
    assert.match((promptText("p.md", "crlf\r\n") as { error: string }).error, /"\\r"/);
    assert.match((promptText("p.md", "{{ name }}\n") as { error: string }).error, /not a \{\{placeholder\}\} at 1:1/);
  });

  test("string literals read back as the text, in the quotes Biome picks", () => {
    for (const text of ['say "hi"', "it's", `both ' and "" and \\" and \\\\"`, "tab\t\nline \u2028 é", ""]) {
      const literal = stringLiteral(text);
      assert.equal(new Function(`return ${literal};`)(), text, literal);
    }
    assert.equal(stringLiteral('a "b"'), `'a "b"'`);
    assert.equal(stringLiteral(`it's "b"`), `'it\\'s "b"'`);
    assert.equal(stringLiteral(`it's`), `"it's"`);
  });

  test("every src/<room>/prompts.generated.ts is up to date (else: npm run build:prompts)", () => {
    const rooms = promptRooms(REPO_ROOT);
    assert.deepEqual(rooms, ["capabilities", "contracts", "executor", "infty", "memories", "session"]);
    for (const room of rooms) {
      const file = promptsModulePath(REPO_ROOT, room);
      assert.ok(
        existsSync(file) && readFileSync(file, "utf8") === promptsModuleSource(REPO_ROOT, room),
        `${path.relative(REPO_ROOT, file)} is stale: run npm run build:prompts and commit it`,
      );
    }
    const generated = readdirSync(path.join(REPO_ROOT, "src"))
      .filter((room) => existsSync(promptsModulePath(REPO_ROOT, room)))
      .sort();
    assert.deepEqual(generated, rooms, "a prompts.generated.ts without a prompts/ folder is left over: delete it");
  });

  test("Biome formats the generated modules but never the prompt files (it would rewrite Markdown the model reads)", () => {
    const biome = JSON.parse(readFileSync(path.join(REPO_ROOT, "biome.json"), "utf8")) as {
      files: { includes: string[] };
    };
    const includes = biome.files.includes;
    assert.ok(includes.includes("!src/*/prompts/*.md"), "biome.json's files.includes leaves out src/*/prompts/*.md");
    const excludesAll = includes.lastIndexOf("!**/*.generated.ts");
    assert.ok(
      excludesAll === -1 || includes.indexOf("src/*/prompts.generated.ts") > excludesAll,
      "biome.json formats src/*/prompts.generated.ts (no exclusion of every generated module, or it is taken back after one)",
    );
    assert.ok(
      !includes.some((i) => i.startsWith("!") && i.includes("prompts.generated")),
      "prompt modules are not left out",
    );
  });

  test("each prompt names its placeholders as its text uses them", () => {
    for (const room of promptRooms(REPO_ROOT))
      for (const p of readPrompts(REPO_ROOT, room)) {
        assert.deepEqual(p.placeholders, placeholdersOf(p.text), p.source);
        assert.match(p.name, /^[A-Z][A-Z0-9_]*$/, p.source);
      }
  });
});

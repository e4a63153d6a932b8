/** The executor's skills methods on its own filesystem: front matter, reasons for skips, body slices. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { discoverSkills, FRONT_MATTER_MAX_BYTES, readSkill } from "../../src/workspace/skills.ts";
import { writeSkill } from "../support/skills.ts";

describe("executor skills", () => {
  test("discovery: hidden, bad and oversized front matter, a missing root, each with its reason", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      writeSkill(root, "a", { hidden: true });
      writeSkill(root, "b", { frontMatter: "---\nname: b\n---\n" });
      writeSkill(root, "c", { frontMatter: `---\nname: c\ndescription: ${"x".repeat(FRONT_MATTER_MAX_BYTES)}\n---\n` });
      const r = await discoverSkills([root, path.join(root, "missing"), "relative/path"]);
      assert.deepEqual(
        r.skills.map((s) => [s.name, s.hidden]),
        [["a", true]],
      );
      assert.deepEqual(
        r.warnings.map((w) => w.reason),
        ["bad_front_matter", "too_large", "unavailable_root", "unavailable_root"],
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("front matter is YAML: block scalars, quoting rules and escapes, any scalar as a string", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      writeSkill(root, "folded", {
        frontMatter: "---\nname: folded\ndescription: >-\n  Deploys the service\n  after the tests pass.\n---\n",
      });
      writeSkill(root, "literal", {
        frontMatter: "---\nname: literal\ndescription: |\n  line one\n    indented two\nhidden: yes\n---\n",
      });
      writeSkill(root, "single", { frontMatter: "---\nname: 'it''s'\ndescription: 'it''s fine: really'\n---\n" });
      writeSkill(root, "double", {
        frontMatter:
          '---\nname: "double"\ndescription: "tab\\there, \\"quoted\\", caf\\u00e9 # not a comment"\nhidden: "false"\n---\n',
      });
      writeSkill(root, "plain", {
        frontMatter: "---\nname: 2024\ndescription: plain text # a comment\nmetadata:\n  owner: ops\n---\n",
      });
      const r = await discoverSkills([root]);
      assert.deepEqual(r.warnings, []);
      assert.deepEqual(
        r.skills.map((s) => [s.name, s.description, s.hidden ?? false]),
        [
          ["2024", "plain text", false],
          ["double", 'tab\there, "quoted", café # not a comment', false],
          ["folded", "Deploys the service after the tests pass.", false],
          ["it's", "it's fine: really", false],
          ["literal", "line one\n  indented two", true],
        ],
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("front matter that is not YAML is skipped with the file, its line and the parser's reason", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      const colon = writeSkill(root, "colon", {
        frontMatter: "---\nname: colon\ndescription: Use when: deploying\n---\n",
      });
      const unclosed = writeSkill(root, "unclosed", {
        frontMatter: "---\nname: unclosed\n\ndescription: [a, b\n---\n",
      });
      writeSkill(root, "fine");
      const r = await discoverSkills([root]);
      assert.deepEqual(
        r.skills.map((s) => s.name),
        ["fine"],
      );
      assert.deepEqual(
        r.warnings.map((w) => [w.path, w.reason]),
        [
          [colon, "bad_front_matter"],
          [unclosed, "bad_front_matter"],
        ],
      );
      assert.match(
        r.warnings[0]!.message,
        new RegExp(
          `^${colon}:3: front matter is not valid YAML: Nested mappings are not allowed in compact mappings; fix it`,
        ),
      );
      assert.match(r.warnings[1]!.message, new RegExp(`^${unclosed}:4: front matter is not valid YAML: .*; skipped$`));
      const body = await readSkill(colon);
      assert.ok(
        "ok" in body && body.ok.body === "colon body\n",
        "the body of a skill with bad front matter still starts after it",
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("skills are listed in code-unit order of their names, the same in every locale", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      for (const name of ["beta", "alpha", "Zeta", "émile", "eve"]) writeSkill(root, name);
      const r = await discoverSkills([root]);
      // A locale's collation would put alpha first and Zeta last, and émile next to eve.
      assert.deepEqual(
        r.skills.map((s) => s.name),
        ["Zeta", "alpha", "beta", "eve", "émile"],
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a body is read in slices of whole UTF-8 characters that add up to the body", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      const body = "é€😀a".repeat(5000);
      const file = writeSkill(root, "u", { body });
      let offset: number | undefined = 0;
      let read = "";
      let slices = 0;
      while (offset !== undefined) {
        const r = await readSkill(file, offset, 1000);
        assert.ok("ok" in r, JSON.stringify(r));
        assert.ok(Buffer.byteLength(r.ok.body) <= 1000);
        assert.equal(r.ok.body_bytes, Buffer.byteLength(body));
        read += r.ok.body;
        offset = r.ok.next_offset;
        slices++;
      }
      assert.equal(read, body);
      assert.ok(slices > 40);
      const notSkill = path.join(root, "notes.md");
      writeFileSync(notSkill, "x");
      assert.ok("error" in (await readSkill(notSkill)));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

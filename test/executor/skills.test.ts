/** The executor's skills methods on its own filesystem: front matter, reasons for skips, body slices. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { discoverSkills, FRONT_MATTER_MAX_BYTES, readSkill } from "../../src/executor/skills.ts";
import { writeSkill } from "../support/skills.ts";

describe("executor skills", () => {
  test("discovery: hidden, bad and oversized front matter, a missing root, each with its reason", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-exec-skills-"));
    try {
      writeSkill(root, "a", { hidden: true });
      writeSkill(root, "b", { frontMatter: "---\nname: b\n---\n" });
      writeSkill(root, "c", { frontMatter: `---\nname: c\ndescription: ${"x".repeat(FRONT_MATTER_MAX_BYTES)}\n---\n` });
      const r = await discoverSkills([root, path.join(root, "missing"), "relative/path"]);
      assert.deepEqual(r.skills.map((s) => [s.name, s.hidden]), [["a", true]]);
      assert.deepEqual(r.warnings.map((w) => w.reason), ["bad_front_matter", "too_large", "unavailable_root", "unavailable_root"]);
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
      assert.deepEqual(r.skills.map((s) => s.name), ["Zeta", "alpha", "beta", "eve", "émile"]);
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

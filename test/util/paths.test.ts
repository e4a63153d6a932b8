/** util/paths.ts: entryAt tells what is at a path without throwing, on the real filesystem. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { entryAt } from "../../src/util/paths.ts";

describe("entryAt", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-entry-at-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("a file, a directory and a dangling symlink are there; a missing name is not", () => {
    writeFileSync(path.join(dir, "file"), "x");
    symlinkSync(path.join(dir, "gone"), path.join(dir, "dangling"));
    assert.equal(entryAt(path.join(dir, "file")), true);
    assert.equal(entryAt(dir), true);
    assert.equal(entryAt(path.join(dir, "dangling")), true);
    assert.equal(entryAt(path.join(dir, "missing")), false);
  });

  test("a path through a file (ENOTDIR) is nothing there, not an exception", () => {
    writeFileSync(path.join(dir, "plain"), "x");
    assert.equal(entryAt(path.join(dir, "plain", ".git")), false);
  });
});

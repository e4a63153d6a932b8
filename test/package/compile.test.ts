import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { quickJsWasmPath } from "../../src/package/compile.ts";
import { REPO_ROOT } from "../support/paths.ts";

describe("the QuickJS wasm a build embeds", () => {
  test("comes from the source tree's node_modules, by the package's ./wasm export", () => {
    const r = quickJsWasmPath(REPO_ROOT);
    assert.ok("ok" in r, JSON.stringify(r));
    assert.ok(r.ok.startsWith(path.join(REPO_ROOT, "node_modules")), r.ok);
    assert.deepEqual([...readFileSync(r.ok).subarray(0, 4)], [0, 0x61, 0x73, 0x6d], "a wasm module's magic number");
  });

  test("a tree without it (no npm ci, or a package without the export) is refused with the fix", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-compile-test-"));
    try {
      const bare = quickJsWasmPath(root);
      assert.ok("error" in bare);
      assert.match(bare.error.message, /@jitl\/quickjs-wasmfile-release-sync.*not installed in .*run npm ci there/);
      const pkg = path.join(root, "node_modules", "@jitl", "quickjs-wasmfile-release-sync");
      mkdirSync(pkg, { recursive: true });
      writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ exports: { ".": "./index.js" } }));
      assert.ok("error" in quickJsWasmPath(root));
      writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ exports: { "./wasm": "./missing.wasm" } }));
      assert.ok("error" in quickJsWasmPath(root));
      writeFileSync(path.join(pkg, "package.json"), "{not json");
      assert.ok("error" in quickJsWasmPath(root));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

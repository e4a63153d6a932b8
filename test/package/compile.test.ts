import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { wasmAssetPath } from "../../src/package/compile.ts";
import { WASM_ASSETS } from "../../src/util/embedded-file.ts";

const QUICKJS = WASM_ASSETS[0]!;
const quickJsWasmPath = (root: string) => wasmAssetPath(root, QUICKJS);

import { REPO_ROOT } from "../support/paths.ts";

describe("the wasm files a build embeds", () => {
  test("come from the source tree's node_modules: QuickJS by its package's ./wasm export, tree-sitter's by path", () => {
    assert.deepEqual(
      WASM_ASSETS.map((a) => a.asset),
      ["quickjs.wasm", "tree-sitter.wasm", "tree-sitter-bash.wasm"],
    );
    for (const asset of WASM_ASSETS) {
      const r = wasmAssetPath(REPO_ROOT, asset);
      assert.ok("ok" in r, JSON.stringify(r));
      assert.ok(r.ok.startsWith(path.join(REPO_ROOT, "node_modules", asset.package)), r.ok);
      assert.deepEqual(
        [...readFileSync(r.ok).subarray(0, 4)],
        [0, 0x61, 0x73, 0x6d],
        `${asset.asset}: a wasm module's magic number`,
      );
    }
  });

  test("a tree without it (no npm ci, or a package without the export) is refused with the fix", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-compile-test-"));
    try {
      const bare = quickJsWasmPath(root);
      assert.ok("error" in bare);
      assert.match(
        bare.error.message,
        /quickjs\.wasm \(@jitl\/quickjs-wasmfile-release-sync, its \.\/wasm export\) is not installed in .*run npm ci there/,
      );
      assert.match(
        JSON.stringify(wasmAssetPath(root, WASM_ASSETS[2]!)),
        /tree-sitter-bash\.wasm \(tree-sitter-bash, tree-sitter-bash\.wasm\) is not installed/,
      );
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

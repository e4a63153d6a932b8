import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  compileEmbeddedWasm,
  embeddedFile,
  isEmbeddedAsset,
  pickEmbedded,
  QUICKJS_WASM_ASSET,
} from "../../src/util/embedded-file.ts";

describe("embedded files", () => {
  test("bun's names for an asset: stem-<hash>.ext under its root, or the name as built", () => {
    assert.ok(isEmbeddedAsset("/$bunfs/root/quickjs-a1b2c3d4.wasm", "quickjs.wasm"));
    assert.ok(isEmbeddedAsset("B:/~BUN/root/quickjs-0z9.wasm", "quickjs.wasm"));
    assert.ok(isEmbeddedAsset("B:\\~BUN\\root\\quickjs-0z9.wasm", "quickjs.wasm"));
    assert.ok(isEmbeddedAsset("quickjs-dbngg1n2.wasm", "quickjs.wasm"), "the bare name Bun.embeddedFiles gives");
    assert.ok(isEmbeddedAsset("quickjs.wasm", "quickjs.wasm"));
    assert.ok(isEmbeddedAsset("/$bunfs/root/relay-bundle-7k2m.gz", "relay-bundle.gz"));
    for (const other of [
      "quickjs-a-b.wasm",
      "quickjs-.wasm",
      "quickjs-A1.wasm",
      "quickjsx.wasm",
      "quickjs-a1.wasm.map",
      "quickjs-a1.gz",
      "relay-bundle-7k2m.wasm",
      "x/quickjs-a1.wasmx",
    ]) {
      assert.equal(isEmbeddedAsset(other, "quickjs.wasm") || isEmbeddedAsset(other, "relay-bundle.gz"), false, other);
    }
  });

  test("tree-sitter.wasm is never taken for tree-sitter-bash.wasm, hashed or not", () => {
    const names = (...n: string[]) => n.map((name) => ({ name }));
    assert.equal(
      pickEmbedded(names("tree-sitter-bash.wasm", "tree-sitter.wasm"), "tree-sitter.wasm")?.name,
      "tree-sitter.wasm",
    );
    assert.equal(pickEmbedded(names("tree-sitter-bash.wasm"), "tree-sitter.wasm"), undefined);
    assert.equal(
      pickEmbedded(names("tree-sitter-bash-k2j4.wasm", "tree-sitter-a1b2.wasm"), "tree-sitter.wasm")?.name,
      "tree-sitter-a1b2.wasm",
    );
    assert.equal(
      pickEmbedded(names("tree-sitter-a1b2.wasm", "tree-sitter-bash-k2j4.wasm"), "tree-sitter-bash.wasm")?.name,
      "tree-sitter-bash-k2j4.wasm",
    );
  });

  test("a process that is not a compiled binary carries none, and compiles nothing", () => {
    assert.equal(embeddedFile(QUICKJS_WASM_ASSET), undefined);
    assert.equal(compileEmbeddedWasm(QUICKJS_WASM_ASSET), null);
  });
});

/** The source rewrite that hands async functions' and import()'s promises to the rejection tracker. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { tokenize } from "../../src/codemode/js-tokens.ts";
import { trackAsync } from "../../src/codemode/track-async.ts";

describe("trackAsync", () => {
  test("each kind of async function and import() is rewritten; the rest of the text is untouched", () => {
    assert.equal(
      trackAsync("async function f(a) { return a }"),
      "function f(a) { return __relayTrack((async () => { return a })()); }",
    );
    assert.equal(
      trackAsync("const g = async (a, b) => a + b;"),
      "const g = (a, b) => __relayTrack((async () => a + b)());",
    );
    assert.equal(
      trackAsync("const h = async x => { await x };"),
      "const h = x => { return __relayTrack((async () => { await x })()); };",
    );
    assert.equal(
      trackAsync("({ async m() { return 1 } })"),
      "({ m() { return __relayTrack((async () => { return 1 })()); } })",
    );
    assert.equal(trackAsync("await import('./x.js')"), "await __relayTrack(import('./x.js'))");
  });

  test("what is not an async function or a dynamic import is left alone", () => {
    for (const src of [
      "async function* g() { yield 1 }",
      "const async = 1; async + 2",
      "async(1)",
      "const o = { async: 1, async() { return 2 } }",
      "x.async(() => 1); y.import(1)",
      "const s = 'async function f() {}'; const t = `async () => ${'import(1)'}`",
      "// async function f() {}\n/* import(x) */ const re = /async function/g",
    ]) {
      assert.equal(trackAsync(src), src, src);
    }
  });

  test("a source the tokenizer cannot read comes back as it was", () => {
    assert.equal(tokenize("const s = 'unterminated"), undefined);
    assert.equal(
      trackAsync("async function f() { const s = 'unterminated }"),
      "async function f() { const s = 'unterminated }",
    );
    assert.equal(trackAsync("async function f() { /* open"), "async function f() { /* open");
  });

  test("templates with nested expressions and braces keep their shape", () => {
    const src = "const f = async () => `a ${ {b: 1}.b } ${`c ${1}`}`;";
    assert.equal(trackAsync(src), "const f = () => __relayTrack((async () => `a ${ {b: 1}.b } ${`c ${1}`}`)());");
  });
});

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { HeadTailBuffer } from "../../src/executor/head-tail-buffer.ts";
import { truncateMiddle } from "../../src/util/truncate.ts";

const text = (b: HeadTailBuffer) => b.peek().toString("latin1");

describe("head/tail buffer", () => {
  test("keeps prefix and suffix when over budget", () => {
    const b = new HeadTailBuffer(10);
    b.push(Buffer.from("0123456789"));
    b.push(Buffer.from("ab"));
    assert.ok(text(b).startsWith("01234"));
    assert.ok(text(b).endsWith("89ab"));
    assert.equal(b.retainedBytes, 10);
    assert.equal(b.omittedBytes, 2);
  });

  test("a zero budget drops everything and counts it", () => {
    const b = new HeadTailBuffer(0);
    b.push(Buffer.from("abc"));
    assert.equal(text(b), "");
    assert.equal(b.omittedBytes, 3);
  });

  test("a one-byte budget keeps only the last byte", () => {
    const b = new HeadTailBuffer(1);
    b.push(Buffer.from("abc"));
    assert.equal(text(b), "c");
    assert.equal(b.omittedBytes, 2);
  });

  test("a chunk larger than the tail budget keeps only its end", () => {
    const b = new HeadTailBuffer(10);
    b.push(Buffer.from("ABCDEFGHIJK"));
    assert.equal(text(b), "ABCDEGHIJK");
    assert.ok(text(b).endsWith("GHIJK"));
  });

  test("fills head then tail across chunks, then evicts the oldest tail byte", () => {
    const b = new HeadTailBuffer(10);
    for (const c of ["01", "23", "4", "56", "789"]) b.push(Buffer.from(c));
    assert.equal(text(b), "0123456789");
    b.push(Buffer.from("a"));
    assert.equal(text(b), "012346789a");
    assert.equal(b.omittedBytes, 1);
  });

  test("draining returns everything once and resets", () => {
    const b = new HeadTailBuffer(10);
    b.push(Buffer.from("hello"));
    assert.equal(b.drain().bytes.toString(), "hello");
    const again = b.drain();
    assert.equal(again.bytes.length, 0);
    assert.equal(again.omittedBytes, 0);
    b.push(Buffer.from("x"));
    assert.equal(text(b), "x", "after a drain the head fills again");
  });

  test("1 MiB of a, then b, then c keeps a head of a and ends with c", () => {
    const b = new HeadTailBuffer(1024 * 1024);
    b.push(Buffer.alloc(1024 * 1024, "a"));
    b.push(Buffer.from("b"));
    b.push(Buffer.from("c"));
    const all = b.peek().toString("latin1");
    assert.equal(all.length, 1024 * 1024);
    assert.ok(all.startsWith("a"));
    assert.ok(all.endsWith("bc"));
  });
});

describe("middle truncation", () => {
  test("text within budget is unchanged", () => {
    const r = truncateMiddle("short\n", 100);
    assert.deepEqual(r, { text: "short\n", truncated: false, originalTokens: 2, totalLines: 1 });
  });

  test("over budget keeps head and tail with a marker and the total line count", () => {
    const input = Array.from({ length: 5000 }, (_, i) => `token token ${i}\n`).join("");
    const r = truncateMiddle(input, 100);
    assert.ok(r.truncated);
    assert.match(
      r.text,
      /^Total output lines: 5000\n\n(token token \d+\n){5,}.*…\d+ tokens truncated….*(token token \d+\n){5,}$/s,
    );
    assert.ok(r.text.includes("token token 0\n"));
    assert.ok(r.text.endsWith("token token 4999\n"));
    assert.equal(r.originalTokens, Math.ceil(Buffer.byteLength(input) / 4));
  });

  test("says which lines the cut touches: the head shows every line before it, the tail every line after it", () => {
    const input = Array.from({ length: 5000 }, (_, i) => `line ${i + 1}\n`).join("");
    const r = truncateMiddle(input, 100);
    assert.ok(r.cutLines, "a cut text says where it was cut");
    const { from, to } = r.cutLines;
    assert.ok(1 < from && from < to && to < 5000, JSON.stringify(r.cutLines));
    const [head, tail] = r.text.split(/…\d+ tokens truncated…/);
    assert.ok(
      head!.includes(`\nline ${from - 1}\n`) && !head!.includes(`\nline ${from}\n`),
      "the head has line from-1 whole, not line from",
    );
    assert.ok(tail!.includes(`\nline ${to + 1}\n`) || tail!.startsWith(`line ${to + 1}\n`));
    assert.ok(
      !tail!.includes(`\nline ${to}\n`) && !tail!.startsWith(`line ${to}\n`),
      "the tail has line to+1 whole, not line to",
    );
    assert.equal(truncateMiddle("short\n", 100).cutLines, undefined);
  });

  test("never splits a multi-byte character", () => {
    const input = "é".repeat(1000);
    const r = truncateMiddle(input, 11);
    assert.ok(!r.text.includes("\ufffd"));
    assert.match(r.text, /^Total output lines: 1\n\né+…\d+ tokens truncated…é+$/);
  });
});

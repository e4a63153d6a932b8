/**
 * The model's connection made ahead of the first request (model/preconnect.ts): which origin,
 * and when it is left alone. Here with a recording stand-in for Bun's `fetch.preconnect`;
 * test/session/preconnect-run.test.ts watches a real `relay run` open its connection early.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { preconnectModel } from "../../src/model/preconnect.ts";

/** A stand-in for fetch.preconnect that records the origins it was given. */
function recorder(): { calls: string[]; fn: (url: string) => void } {
  const calls: string[] = [];
  return { calls, fn: (url) => calls.push(url) };
}

let n = 0;
/** An origin no other test in this process used (the module remembers origins it connected to). */
const fresh = () => `https://api-${process.pid}-${++n}.example.com`;

describe("preconnectModel", () => {
  test("connects to the base URL's origin: scheme, host and port, no path", () => {
    const r = recorder();
    const origin = fresh();
    assert.deepEqual(preconnectModel(`${origin}/v1`, {}, r.fn), { started: true });
    assert.deepEqual(preconnectModel("http://127.0.0.1:8080/v1/", {}, r.fn), { started: true });
    assert.deepEqual(r.calls, [origin, "http://127.0.0.1:8080"]);
  });

  for (const name of ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
    test(`left alone with ${name} set: the requests go through the proxy`, () => {
      const r = recorder();
      const got = preconnectModel(`${fresh()}/v1`, { [name]: "http://proxy.internal:3128" }, r.fn);
      assert.deepEqual(got, { started: false, why: `${name} is set: requests go through the proxy` });
      assert.deepEqual(r.calls, []);
    });

  test("an empty proxy variable is no proxy", () => {
    const r = recorder();
    assert.deepEqual(preconnectModel(`${fresh()}/v1`, { HTTPS_PROXY: " " }, r.fn), { started: true });
  });

  test("not an http(s) URL, or no URL at all: nothing to connect to", () => {
    const r = recorder();
    assert.deepEqual(preconnectModel("ftp://files.example.com/v1", {}, r.fn), {
      started: false,
      why: "not an http(s) URL",
    });
    assert.deepEqual(preconnectModel("api.example.com/v1", {}, r.fn), { started: false, why: "not a URL" });
    assert.deepEqual(r.calls, []);
  });

  test("a runtime without fetch.preconnect (Node, Deno) does nothing", () => {
    assert.deepEqual(preconnectModel(`${fresh()}/v1`, {}, null), {
      started: false,
      why: "this runtime's fetch cannot preconnect",
    });
  });

  test("a preconnect that throws is reported, not thrown: the request connects itself", () => {
    const got = preconnectModel(`${fresh()}/v1`, {}, () => {
      throw new Error("no sockets left");
    });
    assert.deepEqual(got, { started: false, why: "no sockets left" });
  });

  test("one origin is connected to once a minute, however many sessions open (infty's roles)", () => {
    const r = recorder();
    const origin = fresh();
    const t0 = 1_000_000;
    assert.deepEqual(preconnectModel(`${origin}/v1`, {}, r.fn, t0), { started: true });
    assert.deepEqual(preconnectModel(`${origin}/v1`, {}, r.fn, t0 + 59_999), {
      started: false,
      why: "connected to lately",
    });
    assert.deepEqual(preconnectModel(`${origin}/v1`, {}, r.fn, t0 + 60_000), { started: true });
    assert.deepEqual(r.calls, [origin, origin]);
  });
});

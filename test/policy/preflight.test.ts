/** What counts as a server that needs no key: relay run's preflight and relay doctor share the rule. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { applyOverrides, defaultConfig } from "../../src/config/config.ts";
import { checkCredentials, isLocalUrl } from "../../src/policy/preflight.ts";

describe("local and private-network model servers", () => {
  test("loopback, RFC 1918, link-local, IPv6 unique-local and .local names need no key; public hosts do", () => {
    for (const url of [
      "http://localhost:11434/v1",
      "http://127.0.0.2:8080",
      "http://[::1]:8000/v1",
      "http://10.1.2.3/v1",
      "http://172.16.0.9/v1",
      "http://172.31.255.1/v1",
      "http://192.168.1.20:8000/v1",
      "http://169.254.3.4/",
      "http://[fd12:3456::1]:80/",
      "http://[fe80::1]/",
      "http://gpu-box.local:8000/v1",
    ]) {
      assert.equal(isLocalUrl(url), true, url);
    }
    for (const url of [
      "https://api.openai.com/v1",
      "http://172.32.0.1/v1",
      "http://172.15.0.1/v1",
      "http://192.169.1.1/",
      "http://11.0.0.1/",
      "http://[2001:db8::1]/",
      "http://local.example.com/",
      "not a url",
    ]) {
      assert.equal(isLocalUrl(url), false, url);
    }
  });

  test("relay run's preflight lets a private-network server through without a key", () => {
    const config = applyOverrides(defaultConfig(), {
      provider: "openai-chat",
      base_url: "http://192.168.1.20:8000/v1",
    });
    assert.ok("ok" in config);
    assert.ok("ok" in checkCredentials(config.ok, {}));
  });
});

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { bunCacheDir, ensureTargetBun, type BunFetcher } from "../../src/package/bun-cache.ts";
import { TARGETS } from "../../src/package/targets.ts";
import { ok } from "../../src/util/result.ts";
import { fakeElf } from "./fixtures.ts";

describe("bun runtime cache", () => {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-cache-"));
  after(() => rmSync(home, { recursive: true, force: true }));
  const target = TARGETS["linux-arm64"];
  let calls = 0;
  const fetcher: BunFetcher = async ({ pkg, version, dest }) => {
    calls++;
    assert.equal(pkg, "@oven/bun-linux-aarch64");
    assert.equal(version, "9.9.9");
    writeFileSync(dest, fakeElf(183, 4096));
    return ok(null);
  };

  test("fetches once, records size and sha256, then reuses the verified copy", async () => {
    const first = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in first, JSON.stringify(first));
    assert.equal(first.ok.fetched, true);
    assert.equal(first.ok.path, path.join(home, "cache", "bun", "9.9.9", "linux-arm64", "bun"));
    const meta = JSON.parse(readFileSync(path.join(bunCacheDir(home, "9.9.9", target), "meta.json"), "utf8"));
    assert.equal(meta.size, 64 + 4096);
    assert.match(meta.sha256, /^[0-9a-f]{64}$/);
    const second = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in second);
    assert.equal(second.ok.fetched, false);
    assert.deepEqual(second.ok.notes, []);
    assert.equal(calls, 1);
  });

  test("a corrupt cached file (wrong sha256, same size) is detected and refetched", async () => {
    const dir = bunCacheDir(home, "9.9.9", target);
    const bin = path.join(dir, "bun");
    const bytes = readFileSync(bin);
    bytes[200] = 0x55;
    writeFileSync(bin, bytes);
    const r = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in r);
    assert.equal(r.ok.fetched, true);
    assert.match(r.ok.notes.join("\n"), /is unusable \(sha256 .* != recorded .*\); refetching/);
    assert.equal(calls, 2);
    assert.deepEqual(readFileSync(bin), fakeElf(183, 4096));
  });

  test("a fake small cached file with a made-up meta, or a missing meta, is refetched", async () => {
    const dir = bunCacheDir(home, "9.9.9", target);
    writeFileSync(path.join(dir, "bun"), "tiny");
    writeFileSync(path.join(dir, "meta.json"), JSON.stringify({ package: target.ovenPackage, version: "9.9.9", target: target.name, file: "bun", size: 4, sha256: "0".repeat(64), fetchedAt: "x" }));
    const r = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in r && r.ok.fetched && /sha256/.test(r.ok.notes.join("")));
    rmSync(path.join(dir, "meta.json"));
    const r2 = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in r2 && r2.ok.fetched && /meta.json missing/.test(r2.ok.notes.join("")));
    assert.equal(calls, 4);
  });

  test("a fetched runtime for the wrong CPU, or a failed fetch, leaves nothing cached", async () => {
    const otherHome = path.join(home, "other");
    mkdirSync(otherHome);
    const wrong = await ensureTargetBun({
      home: otherHome,
      version: "9.9.9",
      target,
      fetcher: async ({ dest }) => (writeFileSync(dest, fakeElf(62)), ok(null)),
    });
    assert.ok("error" in wrong && wrong.error.code === "fetch_failed" && /not a linux-arm64 executable/.test(wrong.error.message));
    assert.equal(existsSync(path.join(bunCacheDir(otherHome, "9.9.9", target), "bun")), false);
    const failed = await ensureTargetBun({
      home: otherHome,
      version: "9.9.9",
      target,
      fetcher: async () => ({ error: { code: "fetch_failed", message: "offline" } }),
    });
    assert.ok("error" in failed && failed.error.message === "offline");
  });
});

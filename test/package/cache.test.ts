import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import * as tar from "tar-stream";
import { type BunFetcher, bunCacheDir, ensureTargetBun } from "../../src/package/bun-cache.ts";
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
    writeFileSync(
      path.join(dir, "meta.json"),
      JSON.stringify({
        package: target.ovenPackage,
        version: "9.9.9",
        target: target.name,
        file: "bun",
        size: 4,
        sha256: "0".repeat(64),
        fetchedAt: "x",
      }),
    );
    const r = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in r && r.ok.fetched && /sha256/.test(r.ok.notes.join("")));
    rmSync(path.join(dir, "meta.json"));
    const r2 = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
    assert.ok("ok" in r2 && r2.ok.fetched && /meta.json missing/.test(r2.ok.notes.join("")));
    assert.equal(calls, 4);
  });

  test("a meta.json that is not JSON, or not the cache's shape, is said and the runtime refetched", async () => {
    const dir = bunCacheDir(home, "9.9.9", target);
    for (const [text, why] of [
      ["{not json", /meta\.json is not valid JSON/],
      ['{"size": "big"}', /meta\.json is invalid/],
    ] as const) {
      writeFileSync(path.join(dir, "meta.json"), text);
      const before = calls;
      const r = await ensureTargetBun({ home, version: "9.9.9", target, fetcher });
      assert.ok("ok" in r);
      assert.equal(r.ok.fetched, true);
      assert.match(r.ok.notes.join("\n"), why);
      assert.equal(calls, before + 1);
    }
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
    assert.ok(
      "error" in wrong &&
        wrong.error.code === "fetch_failed" &&
        /not a linux-arm64 executable/.test(wrong.error.message),
    );
    assert.equal(existsSync(path.join(bunCacheDir(otherHome, "9.9.9", target), "bun")), false);
    const failed = await ensureTargetBun({
      home: otherHome,
      version: "9.9.9",
      target,
      fetcher: async () => ({ error: { code: "fetch_failed", message: "offline" } }),
    });
    assert.ok("error" in failed && failed.error.message.startsWith("offline\nOffline? Put "), JSON.stringify(failed));
  });
});

/** An npm tarball holding `package/bin/bun` with the given bytes. */
async function npmTarball(bun: Buffer): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name: "package/package.json" }, "{}");
  pack.entry({ name: "package/bin/bun", mode: 0o755 }, bun);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

describe("bun runtime from an npm registry over HTTP (loopback)", () => {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-registry-"));
  const target = TARGETS["linux-arm64"];
  const requests: string[] = [];
  let tgz: Buffer = Buffer.alloc(0);
  let integrity = "";
  let server: Server;
  let registry = "";
  before(async () => {
    tgz = await npmTarball(fakeElf(183, 4096));
    integrity = `sha512-${createHash("sha512").update(tgz).digest("base64")}`;
    server = createServer((req, res) => {
      requests.push(req.url ?? "");
      if (req.url === "/@oven/bun-linux-aarch64/9.9.9") {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            name: "@oven/bun-linux-aarch64",
            version: "9.9.9",
            dist: { tarball: `${registry}/t/bun.tgz`, integrity },
          }),
        );
      } else if (req.url === "/t/bun.tgz") res.end(tgz);
      else (res.statusCode = 404), res.end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.close();
    rmSync(home, { recursive: true, force: true });
  });

  test("fetches the version document, checks the tarball's sha512 and extracts bin/bun", async () => {
    const r = await ensureTargetBun({ home, version: "9.9.9", target, env: { RELAY_NPM_REGISTRY: registry } });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.fetched, true);
    assert.deepEqual(readFileSync(r.ok.path), fakeElf(183, 4096));
    assert.deepEqual(requests, ["/@oven/bun-linux-aarch64/9.9.9", "/t/bun.tgz"]);
  });

  test("a tarball that does not match the registry's sha512 is refused and nothing is cached", async () => {
    const other = path.join(home, "tampered");
    const good = tgz;
    tgz = await npmTarball(fakeElf(183, 999));
    try {
      const r = await ensureTargetBun({ home: other, version: "9.9.9", target, env: { RELAY_NPM_REGISTRY: registry } });
      assert.ok(
        "error" in r && /failed its integrity check \(sha512 .* != registry's/.test(r.error.message),
        JSON.stringify(r),
      );
      assert.equal(existsSync(path.join(bunCacheDir(other, "9.9.9", target), "bun")), false);
    } finally {
      tgz = good;
    }
  });

  test("an unknown version says so and names the tarball to place for an offline build", async () => {
    const r = await ensureTargetBun({ home, version: "0.0.1", target, env: { RELAY_NPM_REGISTRY: registry } });
    assert.ok("error" in r);
    assert.match(r.error.message, /HTTP 404 \(no @oven\/bun-linux-aarch64@0.0.1 on this registry\)/);
    assert.ok(
      r.error.message.includes(
        `Put ${registry}/@oven/bun-linux-aarch64/-/bun-linux-aarch64-0.0.1.tgz at ${path.join(bunCacheDir(home, "0.0.1", target), "bun-linux-aarch64-0.0.1.tgz")}`,
      ),
      r.error.message,
    );
  });

  test("offline, a tarball placed where the message said is extracted and used", async () => {
    const dir = bunCacheDir(home, "0.0.2", target);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "bun-linux-aarch64-0.0.2.tgz"), await npmTarball(fakeElf(183, 512)));
    const r = await ensureTargetBun({
      home,
      version: "0.0.2",
      target,
      env: { RELAY_NPM_REGISTRY: "http://127.0.0.1:1" },
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.match(r.ok.notes.join("\n"), /used the tarball placed at/);
    assert.deepEqual(readFileSync(r.ok.path), fakeElf(183, 512));
  });

  test("a placed tarball that is not one says why", async () => {
    const dir = bunCacheDir(home, "0.0.3", target);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "bun-linux-aarch64-0.0.3.tgz"), "not gzip");
    const r = await ensureTargetBun({
      home,
      version: "0.0.3",
      target,
      env: { RELAY_NPM_REGISTRY: "http://127.0.0.1:1" },
    });
    assert.ok("error" in r && /cannot read the tarball/.test(r.error.message), JSON.stringify(r));
  });
});

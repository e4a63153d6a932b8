import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import type { SandboxPolicy } from "../../../src/contracts/sandbox-policy.ts";
import { checkWritable, resolveToolPath } from "../../../src/executor/files/paths.ts";
import { isInside } from "../../../src/util/paths.ts";
import { errOf, withTmp } from "./support.ts";

const ws = (...roots: string[]): SandboxPolicy => ({ mode: "workspace-write", writable_roots: roots, network: false });

describe("resolveToolPath", () => {
  test("relative paths resolve against cwd, absolute ones are kept", () => {
    assert.equal(resolveToolPath("/a/b", "c/d.txt"), path.resolve("/a/b/c/d.txt"));
    assert.equal(resolveToolPath("/a/b", "../x"), path.resolve("/a/x"));
    assert.equal(resolveToolPath("/a/b", "/etc/hosts"), path.resolve("/etc/hosts"));
  });

  test("isInside does not confuse a sibling sharing a name prefix", () => {
    assert.equal(isInside("/w/root/a", "/w/root"), true);
    assert.equal(isInside("/w/root", "/w/root"), true);
    assert.equal(isInside("/w/rootx/a", "/w/root"), false);
    assert.equal(isInside("/w/..foo", "/w"), true);
    assert.equal(isInside("/w", "/w/root"), false);
  });
});

describe("checkWritable", () => {
  test("read-only refuses everything and says the sandbox is read-only", async () => {
    await withTmp(async (dir) => {
      const r = await checkWritable(path.join(dir, "a.txt"), {
        mode: "read-only",
        writable_roots: [dir],
        network: false,
      });
      const e = errOf(r, "sandbox_denied");
      assert.match(e.message, /read-only/);
    });
  });

  test("danger-full-access allows any path", async () => {
    const r = await checkWritable("/definitely/not/a/root/file", {
      mode: "danger-full-access",
      writable_roots: [],
      network: true,
    });
    assert.ok("ok" in r);
  });

  test("workspace-write allows existing and not-yet-existing paths inside a root", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      fs.mkdirSync(path.join(root, "sub"), { recursive: true });
      for (const p of ["a.txt", "sub/b.txt", "new/dir/c.txt"]) {
        const r = await checkWritable(path.join(root, p), ws(root));
        assert.ok("ok" in r, JSON.stringify(r));
      }
      const second = await checkWritable(path.join(dir, "other", "x"), ws(root, path.join(dir, "other")));
      assert.ok("ok" in second);
    });
  });

  test("workspace-write refuses paths outside the roots, including prefix siblings and ..", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      fs.mkdirSync(root);
      for (const p of [
        path.join(dir, "outside.txt"),
        path.join(dir, "rootx", "a.txt"),
        path.join(root, "..", "esc.txt"),
      ]) {
        const e = errOf(await checkWritable(p, ws(root)), "sandbox_denied");
        assert.match(e.message, /writable roots/);
        assert.ok(e.message.includes(root), e.message);
      }
      errOf(await checkWritable(path.join(root, "a"), ws()), "sandbox_denied");
    });
  });

  test("workspace-write refuses a path that escapes through a symlinked directory", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      const outside = path.join(dir, "outside");
      fs.mkdirSync(root);
      fs.mkdirSync(outside);
      fs.symlinkSync(outside, path.join(root, "link-out"));
      fs.writeFileSync(path.join(outside, "f.txt"), "x");
      fs.symlinkSync(path.join(outside, "f.txt"), path.join(root, "file-link"));
      for (const p of ["link-out/x", "link-out/deep/new/x", "file-link"]) {
        const e = errOf(await checkWritable(path.join(root, p), ws(root)), "sandbox_denied");
        assert.ok(e.message.includes(outside), e.message);
      }
    });
  });

  test("a writable root given through a symlink still admits its real contents", async () => {
    await withTmp(async (dir) => {
      const real = path.join(dir, "real");
      fs.mkdirSync(real);
      fs.symlinkSync(real, path.join(dir, "alias"));
      assert.ok("ok" in (await checkWritable(path.join(real, "a"), ws(path.join(dir, "alias")))));
      assert.ok("ok" in (await checkWritable(path.join(dir, "alias", "a"), ws(real))));
    });
  });
});

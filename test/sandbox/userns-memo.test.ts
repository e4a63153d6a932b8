/**
 * A successful user-namespace probe is remembered in the user's private directory
 * (sandbox/linux/userns-memo.ts), under a key of what decides it; failures never are. The key
 * and the file with stand-ins here, then `relay doctor` twice in one fresh TMPDIR: the second
 * takes the first one's result, and a memo under another key is probed over.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { probeUserns } from "../../src/sandbox/index.ts";
import { type ProcReader, rememberedSuccess, rememberSuccess, usernsKey } from "../../src/sandbox/linux/userns-memo.ts";
import { logFile, logLines } from "../support/log-file.ts";
import { runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-userns-memo-"));
after(() => rmSync(base, { recursive: true, force: true }));

const PROC: Record<string, string> = {
  "/proc/sys/kernel/random/boot_id": "boot-1",
  "/proc/sys/user/max_user_namespaces": "1000",
  "/proc/self/status": "Name:\trelay\nSeccomp:\t0\n",
  "/proc/self/ns/user": "user:[1]",
  "/proc/self/ns/mnt": "mnt:[2]",
};

/** A /proc with `changes` over PROC (undefined: the file is absent). */
function proc(changes: Record<string, string | undefined> = {}): ProcReader {
  const files = { ...PROC, ...changes };
  return { file: (p) => files[p], link: (p) => files[p] };
}

describe("the user-namespace memo's key and file", () => {
  test("the key changes with whatever decides the probe; without a boot id there is none", () => {
    const key = usernsKey("native-a", proc(), 1000);
    assert.ok(key);
    const others = [
      usernsKey("native-b", proc(), 1000),
      usernsKey("native-a", proc(), 1001),
      usernsKey("native-a", proc({ "/proc/sys/kernel/random/boot_id": "boot-2" }), 1000),
      usernsKey("native-a", proc({ "/proc/self/ns/user": "user:[9]" }), 1000),
      usernsKey("native-a", proc({ "/proc/self/ns/mnt": "mnt:[9]" }), 1000),
      usernsKey("native-a", proc({ "/proc/sys/user/max_user_namespaces": "0" }), 1000),
      usernsKey("native-a", proc({ "/proc/sys/kernel/unprivileged_userns_clone": "0" }), 1000),
      usernsKey("native-a", proc({ "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1" }), 1000),
      usernsKey("native-a", proc({ "/proc/self/status": "Seccomp:\t2\n" }), 1000),
    ];
    for (const other of others) assert.notEqual(other, key);
    assert.equal(new Set(others).size, others.length);
    assert.equal(usernsKey("native-a", proc({ "/proc/sys/kernel/random/boot_id": undefined }), 1000), undefined);
  });

  test("a success is found under its own key only, in a file only its owner reads", () => {
    const dir = mkdtempSync(path.join(base, "dir-"));
    assert.equal(rememberedSuccess(dir, "k1"), false, "nothing remembered yet");
    rememberSuccess(dir, "k1");
    assert.equal(rememberedSuccess(dir, "k1"), true);
    assert.equal(rememberedSuccess(dir, "k2"), false);
    assert.equal(statSync(path.join(dir, "userns-ok")).mode & 0o777, 0o600);
  });

  test("a file of anything else there is no success, and a directory it cannot write to loses nothing", () => {
    const dir = mkdtempSync(path.join(base, "dir-"));
    for (const junk of ["", "{not json", '{"ok":true}', "k1\n", "\0\0\0"]) {
      writeFileSync(path.join(dir, "userns-ok"), junk);
      assert.equal(rememberedSuccess(dir, "k1"), false, JSON.stringify(junk));
    }
    const locked = mkdtempSync(path.join(base, "locked-"));
    chmodSync(locked, 0o500);
    try {
      assert.doesNotThrow(() => rememberSuccess(locked, "k1"));
      if (process.getuid?.() !== 0) assert.equal(rememberedSuccess(locked, "k1"), false);
    } finally {
      chmodSync(locked, 0o700);
    }
  });
});

const works = process.versions.bun ? await probeUserns() : undefined;
const skip = skipBecause(
  "the user-namespace memo through relay doctor",
  !works
    ? "the probe needs Bun's FFI (relay runs from source under Node or Deno here)"
    : !works.ok && `user namespaces do not work here, so there is no success to remember: ${works.detail}`,
);

describe("relay doctor's user-namespace probe, remembered", { skip }, () => {
  test("the first probe writes the memo, the next process takes it, and one under another key is probed over", async () => {
    const tmp = mkdtempSync(path.join(base, "tmp-"));
    const home = mkdtempSync(path.join(base, "home-"));
    const env = { ...process.env, TMPDIR: tmp, RELAY_HOME: home, RELAY_LOG: "debug" };
    const memo = path.join(tmp, `relay-cc-${process.getuid?.() ?? 0}`, "userns-ok");
    const remembered = () =>
      logLines(logFile(home)).filter((l) => l.service === "sandbox" && /an earlier probe/.test(l.msg)).length;
    const doctor = async () => {
      const r = await runRelayAsync(["doctor"], env);
      assert.match(r.stdout, /^ok +user namespaces/m, r.stdout + r.stderr);
    };
    await doctor();
    const key = readFileSync(memo, "utf8");
    assert.match(key, /"boot":/);
    assert.equal(remembered(), 0, "the first process probed");
    await doctor();
    assert.equal(remembered(), 1, "the second took the memo");
    writeFileSync(memo, key.replace(/"boot":"[^"]*"/, '"boot":"another boot"'));
    await doctor();
    assert.equal(remembered(), 1, "a memo of another boot is not taken");
    assert.equal(readFileSync(memo, "utf8"), key, "and the probe wrote the current key back");
  });
});

/** Rollouts hold secrets verbatim: they are 0600 files in 0700 directories, whatever the umask. */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { sessionsDir } from "../../src/home/home.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { skipBecause } from "../support/skip.ts";
import { must } from "./support.ts";

const mode = (p: string) => statSync(p).mode & 0o777;
const octal = (m: number) => `0${m.toString(8)}`;

function tempHome(): { home: string } & Disposable {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-perms-"));
  return { home, [Symbol.dispose]: () => rmSync(home, { recursive: true, force: true }) };
}

/** The directories from sessions/ down to the rollout's day folder. */
function dirsOf(home: string, file: string): string[] {
  const out: string[] = [];
  for (let d = path.dirname(file); d.length >= sessionsDir(home).length; d = path.dirname(d)) out.push(d);
  return out;
}

function create(home: string, now = new Date(2025, 4, 6, 7, 8, 9)) {
  return RolloutWriter.create({ home, meta: { cwd: "/w", source: "cli" }, now });
}

describe("rollout permissions", {
  skip: skipBecause("rollout permissions", process.platform === "win32" && "Windows has no POSIX modes"),
}, () => {
  test("a new rollout is 0600 and sessions/YYYY/MM/DD are 0700, even with umask 000", async () => {
    using h = tempHome();
    const old = process.umask(0o000);
    let file: string;
    try {
      const w = must(await create(h.home));
      must(
        await w.appendItems([
          { type: "message", role: "user", content: [{ type: "input_text", text: "export TOKEN=x" }] },
        ]),
      );
      must(await w.close());
      file = w.path;
    } finally {
      process.umask(old);
    }
    assert.equal(octal(mode(file)), "0600");
    const dirs = dirsOf(h.home, file);
    assert.equal(dirs.length, 4, dirs.join(", "));
    for (const d of dirs) assert.equal(octal(mode(d)), "0700", d);
  });

  test("directories left loose by an older relay are tightened; a resumed rollout becomes 0600", async () => {
    using h = tempHome();
    const day = path.join(sessionsDir(h.home), "2025", "05", "06");
    mkdirSync(day, { recursive: true, mode: 0o755 });
    for (const d of [sessionsDir(h.home), path.dirname(path.dirname(day)), path.dirname(day), day]) chmodSync(d, 0o755);
    const w = must(await create(h.home));
    must(await w.close());
    for (const d of dirsOf(h.home, w.path)) assert.equal(octal(mode(d)), "0700", d);

    chmodSync(w.path, 0o644);
    const r = must(await RolloutWriter.resume(w.path));
    must(await r.close());
    assert.equal(octal(mode(w.path)), "0600");
  });

  test("RELAY_HOME keeps its mode; only the sessions tree is private", async () => {
    using h = tempHome();
    chmodSync(h.home, 0o755);
    const w = must(await create(h.home));
    must(await w.close());
    assert.equal(octal(mode(h.home)), "0755");
    assert.equal(octal(mode(sessionsDir(h.home))), "0700");
  });
});

/** Which named Unix sockets a sandboxed command without network gets hidden (unix-sockets.ts). */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, beforeEach, describe, test } from "node:test";
import { parseNamedSockets, resetSocketSnapshot, socketsToHide } from "../../src/sandbox/linux/unix-sockets.ts";

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), "relay-unix-sockets-")));
after(() => rmSync(base, { recursive: true, force: true }));

const HEADER = "Num       RefCount Protocol Flags    Type St Inode Path\n";
/** A /proc/net/unix line for a socket bound at `p` (or abstract / unnamed). */
const line = (inode: number, p = "") =>
  `0000000000000000: 00000002 00000000 00010000 0001 01 ${inode}${p ? ` ${p}` : ""}\n`;

function procFile(lines: string[]): string {
  const f = path.join(base, `net-unix-${Math.random().toString(36).slice(2)}`);
  writeFileSync(f, HEADER + lines.join(""));
  return f;
}

describe("named Unix sockets to hide", () => {
  const ws = path.join(base, "ws");
  const tmp = path.join(base, "tmp");
  const outside = path.join(base, "run");
  mkdirSync(ws);
  mkdirSync(path.join(tmp, "tmux-1000"), { recursive: true });
  mkdirSync(outside);
  symlinkSync(outside, path.join(base, "var-run"));
  beforeEach(() => resetSocketSnapshot());

  test("parsing keeps named sockets with their inode, paths with spaces whole, and drops abstract and unnamed ones", () => {
    const text =
      HEADER +
      line(11, "/run/docker.sock") +
      line(12, "@/tmp/.X11-unix/X0") +
      line(13) +
      line(14, "/home/u/my dir/s.sock");
    assert.deepEqual(parseNamedSockets(text), [
      { inode: "11", path: "/run/docker.sock" },
      { inode: "14", path: "/home/u/my dir/s.sock" },
    ]);
  });

  test("outside the writable roots hidden (through a symlinked directory too), inside the workspace kept", () => {
    const f = procFile([
      line(1, `${outside}/docker.sock`),
      line(2, `${base}/var-run/bus`),
      line(3, `${ws}/dev.sock`),
      line(4, "@abstract"),
    ]);
    assert.deepEqual(socketsToHide([ws], [tmp], f), [`${outside}/docker.sock`, `${base}/var-run/bus`]);
  });

  test("in a temp dir: a socket there at the first look is hidden; one bound later (the session's own) is not", () => {
    const first = procFile([line(21, `${tmp}/tmux-1000/default`)]);
    assert.deepEqual(socketsToHide([ws], [tmp], first), [`${tmp}/tmux-1000/default`]);
    const later = procFile([line(21, `${tmp}/tmux-1000/default`), line(22, `${tmp}/test-server.sock`)]);
    assert.deepEqual(socketsToHide([ws], [tmp], later), [`${tmp}/tmux-1000/default`]);
  });

  test("a socket whose directory is gone is skipped; an unreadable /proc/net/unix is undefined, not an empty list", () => {
    assert.deepEqual(socketsToHide([ws], [tmp], procFile([line(31, `${base}/gone/s.sock`)])), []);
    assert.equal(socketsToHide([ws], [tmp], path.join(base, "no-such-file")), undefined);
  });

  test("read-only (no writable place): every named socket is hidden", () => {
    const f = procFile([line(41, `${ws}/dev.sock`), line(42, `${tmp}/x.sock`)]);
    assert.deepEqual(socketsToHide([], [], f), [`${ws}/dev.sock`, `${tmp}/x.sock`]);
  });
});

/**
 * A full disk loses nothing and never passes for success: on a small tmpfs (mounted by the test,
 * which needs root; skipped with the reason otherwise) the rollout keeps whole lines only, a
 * session whose record fails stops at once (exit 1, the file, the cause and the fix) and runs
 * nothing after the failure, a session that cannot start leaves no empty rollout, relay.log
 * keeps whole lines, and `relay doctor` reports the free space.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { diskCheck } from "../../src/doctor/storage-checks.ts";
import { appendLine } from "../../src/infty/durable.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { LogFile } from "../../src/util/log-file.ts";
import { reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

/** How a runtime words ENOSPC (Bun and Node: the code; Deno: the OS's text). */
const NO_SPACE = /ENOSPC|No space left on device/;
const base = mkdtempSync(path.join(os.tmpdir(), "relay-full-disk-"));
const mounted: string[] = [];

/** Why a tmpfs cannot be mounted here, or false. */
function noTmpfs(): string | false {
  if (process.platform !== "linux") return "tmpfs is Linux's";
  if (process.getuid?.() !== 0) return "mounting a small tmpfs needs root (CI runs as root)";
  const probe = path.join(base, "probe");
  mkdirSync(probe);
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { encoding: "utf8" });
  if (r.status !== 0) return `mount -t tmpfs failed: ${(r.stderr || r.error?.message || "").trim()}`;
  spawnSync("umount", [probe]);
  return false;
}

/** A fresh tmpfs of `size` (e.g. "256k"); unmounted after the suite. */
function tmpfs(size: string, extra = ""): string {
  const dir = mkdtempSync(path.join(base, "fs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}${extra}`, "tmpfs", dir], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  mounted.push(dir);
  return dir;
}

/** Writes a filler file until the file system is full; returns its path (unlink it to free the space). */
function fill(dir: string): string {
  const file = path.join(dir, `filler-${mounted.length}-${Date.now()}`);
  const chunk = Buffer.alloc(4096, 120);
  let blocks = 0;
  try {
    for (;;) {
      writeFileSync(file, chunk, { flag: "a" });
      blocks++;
    }
  } catch (e) {
    assert.equal((e as NodeJS.ErrnoException).code, "ENOSPC", `filling ${dir} after ${blocks} blocks`);
  }
  return file;
}

/** Each line of a rollout parses, and the file ends with a newline (no torn line). */
function wholeLines(file: string): Array<{ type: string; payload: Record<string, unknown> }> {
  const text = readFileSync(file, "utf8");
  assert.ok(
    text === "" || text.endsWith("\n"),
    `${path.basename(file)} ends in a torn line: ${JSON.stringify(text.slice(-80))}`,
  );
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; payload: Record<string, unknown> });
}

const rollouts = (home: string): string[] => {
  const dir = path.join(home, "sessions");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => path.join(dir, f));
};

const skip = skipBecause("the full-disk tests", noTmpfs());

describe("storage faults: a full disk", { skip }, () => {
  after(() => {
    for (const dir of mounted) spawnSync("umount", ["-l", dir]);
    rmSync(base, { recursive: true, force: true });
  });

  test("a rollout write that does not fit is cut back to the last whole line, and every later append and flush fails", async () => {
    const home = tmpfs("128k");
    const created = await RolloutWriter.create({ home, meta: { cwd: "/w", source: "exec" } });
    assert.ok("ok" in created, JSON.stringify(created));
    const w = created.ok;
    assert.ok("ok" in (await w.append([{ type: "event_msg", payload: { type: "user_message", message: "before" } }])));
    fill(home);
    // Bigger than any slack left in the file's last page: part of it is written, then ENOSPC.
    const big = await w.append([
      { type: "event_msg", payload: { type: "agent_message", message: "y".repeat(64 * 1024) } },
    ]);
    assert.ok("error" in big);
    assert.equal(big.error.code, "rollout_write");
    assert.match(big.error.message, NO_SPACE);
    const small = await w.append([{ type: "event_msg", payload: { type: "agent_message", message: "after" } }]);
    assert.ok("error" in small, "an append after a failed one would leave a gap in the record");
    assert.ok("error" in (await w.flush()));
    await w.close();
    const lines = wholeLines(w.path);
    assert.deepEqual(
      lines.map((l) => l.payload.type ?? l.type),
      ["session_meta", "user_message"],
    );
  });

  test("a session that cannot start leaves no rollout behind", async () => {
    const home = tmpfs("64k");
    mkdirSync(path.join(home, "sessions"));
    fill(home);
    const created = await RolloutWriter.create({
      home,
      meta: { cwd: "/w", source: "exec", base_instructions: { text: "i".repeat(20_000) } },
    });
    assert.ok("error" in created);
    assert.equal(created.error.code, "rollout_create");
    assert.match(created.error.message, new RegExp(`(${NO_SPACE.source}).*the session did not start`));
    assert.deepEqual(rollouts(home), []);
  });

  test("relay run stops at the failed record: exit 1 naming the file, the cause and --resume; the tool call after it never runs; after freeing space the session resumes", async () => {
    const home = tmpfs("4m");
    const work = mkdtempSync(path.join(base, "ws-"));
    const marker = path.join(work, "ran");
    await using server = await startFakeModelServer();
    let filler = "";
    let requests = 0;
    server.responder = () => {
      requests++;
      if (requests > 1) return reply().text("all done");
      // The disk fills while the model thinks; its answer (a tool call) cannot be recorded.
      filler = fill(home);
      return reply().toolCall("exec_command", { cmd: `touch ${marker} # ${"z".repeat(40_000)}` }, { callId: "c1" });
    };
    const env = { ...process.env, RELAY_HOME: home, OPENAI_API_KEY: "sk-test" };
    const args = ["--base-url", server.baseUrl, "-m", "test-model", "--sandbox", "danger-full-access", "-C", work];
    const r = await runRelayAsync(["run", ...args, "touch the marker"], env);
    assert.equal(r.status, 1, r.stderr);
    const [rollout] = rollouts(home);
    assert.ok(rollout, "the session's rollout exists");
    const id = /rollout-.*-([0-9a-f-]{36})\.jsonl$/.exec(rollout)![1]!;
    assert.match(
      r.stderr,
      new RegExp(`cannot write to rollout ${rollout.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: .*(${NO_SPACE.source})`),
    );
    assert.match(r.stderr, new RegExp(`Free space .*relay run --resume ${id}`));
    assert.doesNotMatch(r.stdout + r.stderr, /\bdone\b/);
    assert.equal(existsSync(marker), false, "the tool call whose record failed must not run");
    assert.equal(requests, 1);
    const lines = wholeLines(rollout);
    assert.ok(
      !lines.some((l) => l.payload.type === "function_call"),
      "the call that did not fit is not half in the record",
    );

    unlinkSync(filler);
    const resumed = await runRelayAsync(["run", ...args, "--resume", id], env);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.equal(requests, 2);
    assert.match(resumed.stdout, /all done/);
    assert.equal(lines.length < wholeLines(rollout).length, true);
  });

  test("relay.log keeps whole lines: a line cut short by a full disk is taken back", () => {
    const home = tmpfs("64k");
    const file = path.join(home, "relay.log");
    const problems: string[] = [];
    const log = new LogFile(file, 10 * 1024 * 1024, (p) => problems.push(p));
    log.write('{"msg":"first"}\n');
    fill(home);
    log.write(`{"msg":"${"q".repeat(32 * 1024)}"}\n`);
    log.close();
    assert.equal(readFileSync(file, "utf8"), '{"msg":"first"}\n');
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, NO_SPACE);
  });

  test("an infty run store's append (events, notes) that does not fit throws and leaves the file's whole lines", async () => {
    const dir = tmpfs("64k");
    const file = path.join(dir, "events.jsonl");
    await appendLine(file, '{"n":1}');
    fill(dir);
    await assert.rejects(appendLine(file, JSON.stringify({ n: 2, pad: "p".repeat(32 * 1024) })), NO_SPACE);
    assert.equal(readFileSync(file, "utf8"), '{"n":1}\n');
  });

  test("relay doctor's disk check: missing on a full disk, warn when little is left or few inodes, ok otherwise", async () => {
    const full = tmpfs("64k");
    fill(full);
    const none = await diskCheck(full);
    assert.equal(none.status, "missing");
    assert.equal(none.required, true);
    assert.match(none.detail, /^0 KiB and \d+ inodes free/);
    assert.match(none.fix ?? "", /free space .* or set RELAY_HOME/);
    assert.equal((await diskCheck(tmpfs("10m"))).status, "warn");
    const fewInodes = await diskCheck(tmpfs("512m", ",nr_inodes=100"));
    assert.equal(fewInodes.status, "warn");
    assert.match(fewInodes.detail, /\b9\d inodes free/);
    const roomy = await diskCheck(tmpfs("512m"));
    assert.equal(roomy.status, "ok", roomy.detail);
    assert.match(roomy.detail, /^512\.0 MiB and \d+ inodes free/);
    assert.equal(statSync(full).isDirectory(), true);
  });
});

/**
 * `relay memories schedule`: the line it installs runs in the environment cron gives; it is put
 * into a crontab (keeping the user's other lines) or a systemd user timer, and removed again.
 * cron and systemd are stood in for by small scripts on PATH that keep what they are given.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cronLine, onCalendar, parseEvery } from "../../src/memories/schedule.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { runRelayAsync } from "../support/self.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-schedule-"));
after(() => rmSync(base, { recursive: true, force: true }));

/** A PATH with stand-ins for crontab (a file as the table) and systemctl (logs its calls). */
function fakeTools(name: string): { bin: string; table: string; calls: string } {
  const dir = path.join(base, name);
  const bin = path.join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  const table = path.join(dir, "crontab.txt");
  const calls = path.join(dir, "systemctl.log");
  writeFileSync(
    path.join(bin, "crontab"),
    `#!/bin/sh\nif [ "$1" = "-l" ]; then [ -f '${table}' ] || { echo "no crontab for you" >&2; exit 1; }; cat '${table}'; exit 0; fi\nif [ "$1" = "-" ]; then cat > '${table}'; exit 0; fi\nexit 2\n`,
  );
  writeFileSync(path.join(bin, "systemctl"), `#!/bin/sh\necho "$*" >> '${calls}'\n`);
  chmodSync(path.join(bin, "crontab"), 0o755);
  chmodSync(path.join(bin, "systemctl"), 0o755);
  return { bin, table, calls };
}

const envFor = (home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  RELAY_HOME: home,
  XDG_RUNTIME_DIR: "",
  ...extra,
});

describe("relay memories schedule", () => {
  test("the printed line runs under env -i PATH=/usr/bin:/bin sh -c, exit 0, and logs a timestamped line", async () => {
    const home = path.join(base, "print-home");
    const r = await runRelayAsync(["memories", "schedule", "--print", "--with", "cron"], envFor(home));
    assert.equal(r.status, 0, r.stderr);
    const m = /^\*\/30 \* \* \* \* (.*) # relay memories schedule\n$/.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.ok(!existsSync(home), "printing changes nothing");
    const ran = spawnSync("env", ["-i", "PATH=/usr/bin:/bin", "sh", "-c", m[1]!], { cwd: "/", encoding: "utf8" });
    assert.equal(ran.status, 0, ran.stderr);
    assert.match(
      readFileSync(path.join(home, "logs", "memories.log"), "utf8"),
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: phase1 scanned=0 .*phase2 nothing new to consolidate/,
    );
  });

  test("cron: installed beside the user's own lines, replaced on a second install, removed alone", async () => {
    const tools = fakeTools("cron");
    writeFileSync(tools.table, "0 5 * * * backup.sh\n");
    const env = envFor(path.join(base, "cron-home"), { PATH: `${tools.bin}:${process.env.PATH}` });
    const first = await runRelayAsync(["memories", "schedule"], env);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /^installed a crontab entry \(every 30m\): \*\/30 /);
    const again = await runRelayAsync(["memories", "schedule", "--every", "2h"], env);
    assert.equal(again.status, 0, again.stderr);
    const lines = readFileSync(tools.table, "utf8").trimEnd().split("\n");
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.equal(lines[0], "0 5 * * * backup.sh");
    assert.match(
      lines[1]!,
      /^0 \*\/2 \* \* \* mkdir -p .* memories consolidate >> .*memories\.log 2>&1 # relay memories schedule$/,
    );
    const removed = await runRelayAsync(["memories", "schedule", "--remove"], env);
    assert.equal(removed.stdout, "removed the crontab entry\n");
    assert.equal(readFileSync(tools.table, "utf8"), "0 5 * * * backup.sh\n");
    const none = await runRelayAsync(["memories", "schedule", "--remove"], env);
    assert.match(none.stdout, /^nothing to remove/);
  });

  test("systemd, where it is the user's manager: a oneshot service and a timer, enabled; removed and disabled", async () => {
    const tools = fakeTools("systemd");
    const runtime = path.join(base, "systemd", "run");
    mkdirSync(path.join(runtime, "systemd"), { recursive: true });
    writeFileSync(path.join(runtime, "systemd", "private"), "");
    const config = path.join(base, "systemd", "config");
    const env = envFor(path.join(base, "systemd-home"), {
      PATH: `${tools.bin}:${process.env.PATH}`,
      XDG_RUNTIME_DIR: runtime,
      XDG_CONFIG_HOME: config,
    });
    const r = await runRelayAsync(["memories", "schedule", "--every", "15m"], env);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^installed a systemd user timer \(every 15m\)/);
    const units = path.join(config, "systemd", "user");
    assert.match(
      readFileSync(path.join(units, "relay-memories.timer"), "utf8"),
      /\nOnCalendar=\*:0\/15\nPersistent=true\n/,
    );
    assert.match(
      readFileSync(path.join(units, "relay-memories.service"), "utf8"),
      /\nType=oneshot\nExecStart=\/bin\/sh -c "mkdir -p .* memories consolidate >> .*memories\.log 2>&1"\n/,
    );
    assert.equal(readFileSync(tools.calls, "utf8"), "--user daemon-reload\n--user enable --now relay-memories.timer\n");
    const removed = await runRelayAsync(["memories", "schedule", "--remove"], env);
    assert.match(removed.stdout, /^removed the systemd user timer/);
    assert.ok(
      !existsSync(path.join(units, "relay-memories.timer")) && !existsSync(path.join(units, "relay-memories.service")),
    );
    assert.match(
      readFileSync(tools.calls, "utf8"),
      /--user disable --now relay-memories.timer\n--user daemon-reload\n$/,
    );
  });

  test("bad input and no scheduler: a usage error for an interval cron cannot keep; without cron or systemd, exit 1 with the line to add", async () => {
    const bad = await runRelayAsync(["memories", "schedule", "--every", "45m"], envFor(path.join(base, "bad")));
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--every 45m: cron cannot keep that interval exactly; give minutes that divide an hour/);
    const emptyBin = path.join(base, "empty-bin");
    mkdirSync(emptyBin);
    const none = await runRelayAsync(["memories", "schedule"], envFor(path.join(base, "none"), { PATH: emptyBin }));
    assert.equal(none.status, 1, none.stderr);
    assert.match(
      none.stderr,
      /crontab is not installed and no systemd user manager runs here.*\n\*\/30 \* \* \* \* mkdir -p /,
    );
  });

  test("intervals, and docs/memories.md shows the line the code makes", () => {
    const every = (t: string) => {
      const r = parseEvery(t);
      assert.ok("ok" in r, t);
      return r.ok;
    };
    assert.deepEqual(
      [onCalendar(every("30m")), onCalendar(every("1h")), onCalendar(every("6h")), onCalendar(every("1d"))],
      ["*:0/30", "hourly", "0/6:00", "*-*-* 03:00:00"],
    );
    for (const t of ["7m", "90m", "5h", "2d", "often"]) assert.ok("error" in parseEvery(t), t);
    const docLine = cronLine({ self: ["/usr/local/bin/relay"], home: "/home/you/.relay" }, every("30m"));
    assert.ok(readFileSync(path.join(REPO_ROOT, "docs", "memories.md"), "utf8").includes(`\n${docLine}\n`), docLine);
  });
});

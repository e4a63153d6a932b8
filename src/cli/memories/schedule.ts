/**
 * `relay memories schedule`: installs, prints or removes the entry that runs consolidate
 * periodically: a systemd user timer where systemd is the user's manager, else a crontab line.
 * Both run the line of memories/schedule.ts, which works in the bare environment cron gives.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command, Option } from "@commander-js/extra-typings";
import { relayHome } from "../../home/home.ts";
import {
  CRON_MARKER,
  consolidateLine,
  cronLine,
  type Every,
  parseEvery,
  type ScheduleTarget,
  systemdUnits,
  TIMER_NAME,
  withCronLine,
} from "../../memories/schedule.ts";
import { selfCommand } from "../../protocol/child.ts";
import { findOnPath } from "../../util/which.ts";
import { ExitCode, fail } from "../usage.ts";

type Manager = "cron" | "systemd";

/** This relay as a scheduler must start it: every path absolute (cron's cwd is $HOME). */
export function scheduleTarget(): ScheduleTarget {
  const self = selfCommand();
  if ("error" in self) fail(self.error.message, ExitCode.Failure);
  return {
    self: self.ok.map((a, i) => (i === 0 || a.includes("/") ? path.resolve(a) : a)),
    home: path.resolve(relayHome()),
  };
}

/** Whether a systemd user manager runs for this user (its private socket is there). */
function systemdUserManager(): boolean {
  const runtime = process.env.XDG_RUNTIME_DIR;
  return Boolean(
    runtime && existsSync(path.join(runtime, "systemd", "private")) && findOnPath("systemctl", process.env.PATH),
  );
}

function unitDir(): string {
  return path.join(process.env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config"), "systemd", "user");
}

/** Runs a scheduler tool; a failure ends the command with its output and the line to add by hand. */
function tool(argv: string[], input?: string): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { input, encoding: "utf8" });
  if (r.error || r.status !== 0)
    fail(`${argv.join(" ")} failed: ${(r.error?.message ?? r.stderr.trim()) || `exit ${r.status}`}`, ExitCode.Failure);
  return r.stdout;
}

function crontabProgram(target: ScheduleTarget, every: Every): string {
  const crontab = findOnPath("crontab", process.env.PATH);
  if (crontab) return crontab;
  return fail(
    `crontab is not installed and no systemd user manager runs here. Install cron (e.g. apt install cron), or add this line to your scheduler yourself:\n${cronLine(target, every)}`,
    ExitCode.Failure,
  );
}

/** The user's crontab, empty when there is none yet (`crontab -l` exits 1 then). */
function readCrontab(crontab: string): string {
  const r = spawnSync(crontab, ["-l"], { encoding: "utf8" });
  if (r.error) fail(`${crontab} -l failed: ${r.error.message}`, ExitCode.Failure);
  return r.status === 0 ? r.stdout : "";
}

function installCron(target: ScheduleTarget, every: Every): string {
  const crontab = crontabProgram(target, every);
  tool([crontab, "-"], withCronLine(readCrontab(crontab), cronLine(target, every)));
  return `a crontab entry (every ${every.text}): ${cronLine(target, every)}`;
}

function installSystemd(target: ScheduleTarget, every: Every): string {
  const dir = unitDir();
  const units = systemdUnits(target, every);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${TIMER_NAME}.service`), units.service);
  writeFileSync(path.join(dir, `${TIMER_NAME}.timer`), units.timer);
  tool(["systemctl", "--user", "daemon-reload"]);
  tool(["systemctl", "--user", "enable", "--now", `${TIMER_NAME}.timer`]);
  return `a systemd user timer (every ${every.text}): ${path.join(dir, `${TIMER_NAME}.timer`)}, running: ${consolidateLine(target)}`;
}

/** Removes our entry from wherever it is; says what was removed. */
function remove(): string[] {
  const removed: string[] = [];
  const crontab = findOnPath("crontab", process.env.PATH);
  if (crontab) {
    const before = readCrontab(crontab);
    if (before.split("\n").some((l) => l.endsWith(CRON_MARKER))) {
      tool([crontab, "-"], withCronLine(before, undefined));
      removed.push("the crontab entry");
    }
  }
  const timer = path.join(unitDir(), `${TIMER_NAME}.timer`);
  if (existsSync(timer)) {
    if (systemdUserManager()) tool(["systemctl", "--user", "disable", "--now", `${TIMER_NAME}.timer`]);
    rmSync(timer, { force: true });
    rmSync(path.join(unitDir(), `${TIMER_NAME}.service`), { force: true });
    if (systemdUserManager()) tool(["systemctl", "--user", "daemon-reload"]);
    removed.push(`the systemd user timer (${timer})`);
  }
  return removed;
}

function printEntry(manager: Manager, target: ScheduleTarget, every: Every): string {
  if (manager === "cron") return `${cronLine(target, every)}\n`;
  const units = systemdUnits(target, every);
  return `# ${path.join(unitDir(), `${TIMER_NAME}.service`)}\n${units.service}\n# ${path.join(unitDir(), `${TIMER_NAME}.timer`)}\n${units.timer}`;
}

export function scheduleCommand() {
  return new Command("schedule")
    .description(
      "run memories consolidate periodically: install a systemd user timer or a crontab entry (or print it, or remove it)",
    )
    .option("--every <interval>", "how often: 5m…30m, 1h…12h or 1d", "30m")
    .option("--print", "print the entry instead of installing it")
    .option("--remove", "remove the entry this command installed")
    .addOption(
      new Option(
        "--with <manager>",
        "cron or systemd (default: systemd where it is the user's manager, else cron)",
      ).choices(["cron", "systemd"] as const),
    )
    .addHelpText(
      "after",
      () => `
The entry runs, in the bare environment cron gives (no HOME, PATH=/usr/bin:/bin):
  ${consolidateLine(scheduleTarget())}
Each run appends one timestamped summary line to the log. Nothing else is changed: an existing
crontab keeps its other lines.`,
    )
    .action((opts) => {
      if (opts.remove) {
        const removed = remove();
        process.stdout.write(
          removed.length
            ? `removed ${removed.join(" and ")}\n`
            : "nothing to remove: no entry of relay memories schedule was found\n",
        );
        return;
      }
      const every = parseEvery(opts.every);
      if ("error" in every) fail(every.error.message, ExitCode.Usage);
      const target = scheduleTarget();
      const manager: Manager = opts.with ?? (systemdUserManager() ? "systemd" : "cron");
      if (opts.print) {
        process.stdout.write(printEntry(manager, target, every.ok));
        return;
      }
      const what = manager === "systemd" ? installSystemd(target, every.ok) : installCron(target, every.ok);
      process.stdout.write(
        `installed ${what}\nlog: ${target.home}/logs/memories.log; remove with: relay memories schedule --remove\n`,
      );
    });
}

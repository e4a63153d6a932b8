import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { type DoctorCheck, type DoctorReport, DoctorReportSchema } from "../../src/doctor/check.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv } from "../support/self.ts";

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

const PATH = process.env.PATH ?? "/usr/bin:/bin";

const root = mkdtempSync(path.join(os.tmpdir(), "relay-doctor-test-"));
const userHome = path.join(root, "user");
mkdirSync(userHome);

/** A fresh RELAY_HOME (not created: the doctor creates it), with config.toml when given. */
function relayHomeWith(name: string, configToml?: string): string {
  const home = path.join(root, name);
  if (configToml !== undefined) {
    mkdirSync(home);
    writeFileSync(path.join(home, "config.toml"), configToml);
  }
  return home;
}

/** `relay doctor` in an environment built from scratch. */
function doctor(args: string[], home: string, extraEnv: Record<string, string> = {}): Promise<Run> {
  const [cmd, ...pre] = relayArgv();
  const env = { PATH, HOME: userHome, RELAY_HOME: home, ...extraEnv };
  const child = spawn(cmd!, [...pre, "doctor", ...args], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout, stderr })));
}

function report(r: Run): DoctorReport {
  assert.equal(r.stderr, "", "doctor writes nothing to stderr");
  return DoctorReportSchema.parse(JSON.parse(r.stdout));
}

function find(rep: DoctorReport, name: string): DoctorCheck {
  const c = rep.checks.find((x) => x.name === name);
  assert.ok(c, `no ${name} check in ${JSON.stringify(rep.checks.map((x) => x.name))}`);
  return c;
}

const failedRequired = (rep: DoctorReport) =>
  rep.checks.filter((c) => c.required && c.status !== "ok").map((c) => c.name);

const SECRET = "sk-test-SECRETVALUE";
const noLandlock = { RELAY_SANDBOX_SIMULATE: "landlock-abi=0,no-bwrap" };

describe("relay doctor", () => {
  const runs: Record<
    | "simulated"
    | "fullAccess"
    | "keyHuman"
    | "keyJson"
    | "noKey"
    | "broken"
    | "normal"
    | "gitNoUserns"
    | "gitBestEffort"
    | "localFlags"
    | "privateNet"
    | "badUrl",
    Run
  > = {} as never;
  // A git workspace: keeping its .git read-only needs user namespaces (or bubblewrap).
  const gitWorkspace = path.join(root, "git-ws");
  mkdirSync(path.join(gitWorkspace, ".git"), { recursive: true });
  const noUserns = { RELAY_SANDBOX_SIMULATE: "no-userns,no-bwrap" };

  // Every case is its own process: start them all at once.
  before(async () => {
    const cases: Array<[keyof typeof runs, Promise<Run>]> = [
      ["simulated", doctor(["--json"], relayHomeWith("simulated", 'model_provider = "scripted"\n'), noLandlock)],
      [
        "fullAccess",
        doctor(
          ["--json"],
          relayHomeWith("full", 'sandbox_mode = "danger-full-access"\nmodel_provider = "scripted"\n'),
          noLandlock,
        ),
      ],
      ["keyHuman", doctor([], relayHomeWith("key-human"), { OPENAI_API_KEY: SECRET })],
      ["keyJson", doctor(["--json"], relayHomeWith("key-json"), { OPENAI_API_KEY: SECRET })],
      ["noKey", doctor(["--json"], relayHomeWith("no-key"))],
      [
        "localFlags",
        doctor(
          ["--json", "--provider", "openai-chat", "--base-url", "http://localhost:11434/v1", "-m", "llama3.2"],
          relayHomeWith("local-flags"),
        ),
      ],
      [
        "privateNet",
        doctor(
          [
            "--json",
            "--provider",
            "openai-chat",
            "--base-url",
            "http://192.168.1.20:8000/v1",
            "--api-key-env",
            "LAN_KEY",
          ],
          relayHomeWith("private-net"),
        ),
      ],
      ["badUrl", doctor(["--json", "--base-url", "not a url"], relayHomeWith("bad-url"))],
      ["broken", doctor(["--json"], relayHomeWith("broken", "model = \n"))],
      ["normal", doctor(["--json"], relayHomeWith("normal", 'model_provider = "scripted"\n'))],
      [
        "gitNoUserns",
        doctor(
          ["--json", "-C", gitWorkspace],
          relayHomeWith("git-no-userns", 'model_provider = "scripted"\n'),
          noUserns,
        ),
      ],
      [
        "gitBestEffort",
        doctor(
          ["--json", "-C", gitWorkspace],
          relayHomeWith("git-best-effort", 'model_provider = "scripted"\n[sandbox]\nbest_effort = true\n'),
          noUserns,
        ),
      ],
    ];
    const done = await Promise.all(cases.map(([, p]) => p));
    cases.forEach(([name], i) => (runs[name] = done[i]!));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("lists every check once, in order, and --json matches the schema", () => {
    const rep = report(runs.normal);
    assert.deepEqual(
      rep.checks.map((c) => c.name),
      [
        "sandbox",
        "landlock",
        "seccomp",
        "user namespaces",
        "bubblewrap",
        "pty",
        "relay home",
        "disk space",
        "config",
        "model credentials",
        "executor",
        "containment",
        "code-mode host",
        "git",
        "logs",
      ],
    );
    assert.equal(find(rep, "bubblewrap").required, false);
  });

  test("names the log file, in the home it checked (created now if it was missing)", () => {
    const logs = find(report(runs.noKey), "logs");
    assert.deepEqual(
      [logs.status, logs.required, logs.detail],
      ["ok", false, path.join(root, "no-key", "logs", "relay.log")],
    );
    assert.match(
      runs.keyHuman.stdout,
      new RegExp(`^ok +logs +${path.join(root, "key-human", "logs", "relay.log").replace(/[.]/g, "\\.")}$`, "m"),
    );
  });

  test("a kernel without Landlock and no bubblewrap: the sandbox is missing and required", () => {
    const r = runs.simulated;
    const rep = report(r);
    const sandbox = find(rep, "sandbox");
    assert.equal(sandbox.status, "missing", sandbox.detail);
    assert.equal(sandbox.required, true, "workspace-write (the default) needs a sandbox");
    assert.match(sandbox.fix ?? "", /danger-full-access/);
    assert.match(sandbox.fix ?? "", /bubblewrap/);
    assert.match(sandbox.fix ?? "", /best-effort/);
    const landlock = find(rep, "landlock");
    assert.equal(landlock.status, "missing");
    assert.match(landlock.detail, /simulated/);
    assert.deepEqual(failedRequired(rep), ["sandbox"]);
    assert.equal(rep.ok, false);
    assert.equal(r.status, 1);
  });

  test("a git workspace without user namespaces: the sandbox is what the executor decides (refused, or best effort with the gap named)", {
    skip: process.platform !== "linux" && "the built-in sandbox is Linux only",
  }, () => {
    const refused = report(runs.gitNoUserns);
    const sandbox = find(refused, "sandbox");
    assert.equal(sandbox.status, "missing", sandbox.detail);
    assert.ok(sandbox.detail.startsWith(`commands in ${gitWorkspace} would be refused:`), sandbox.detail);
    assert.match(sandbox.detail, /user namespaces, to keep \.git read-only/);
    assert.match(sandbox.fix ?? "", /best-effort/);
    assert.deepEqual(failedRequired(refused), ["sandbox"]);
    assert.equal(runs.gitNoUserns.status, 1);
    const weaker = find(report(runs.gitBestEffort), "sandbox");
    assert.equal(weaker.status, "warn", weaker.detail);
    assert.match(weaker.detail, new RegExp(`in ${gitWorkspace}, not enforced: .*\\.git`));
    assert.equal(weaker.required, false);
  });

  test("sandbox_mode = danger-full-access: a missing sandbox is reported but not required", () => {
    const r = runs.fullAccess;
    const rep = report(r);
    const sandbox = find(rep, "sandbox");
    assert.equal(sandbox.status, "missing", sandbox.detail);
    assert.equal(sandbox.required, false);
    assert.match(sandbox.detail, /not needed: sandbox_mode = danger-full-access/);
    assert.equal(find(rep, "landlock").status, "missing");
    assert.equal(find(rep, "model credentials").status, "ok", "the scripted provider needs no key");
    assert.deepEqual(failedRequired(rep), []);
    assert.equal(rep.ok, true);
    assert.equal(r.status, 0, r.stdout);
  });

  test("an API key that is set is reported by name only, never by value", () => {
    const human = runs.keyHuman;
    const json = runs.keyJson;
    for (const r of [human, json]) {
      assert.doesNotMatch(r.stdout + r.stderr, /SECRETVALUE/);
      assert.doesNotMatch(r.stdout + r.stderr, /sk-test/);
    }
    const creds = find(report(json), "model credentials");
    assert.equal(creds.status, "ok");
    assert.match(
      creds.detail,
      /^a session would use OPENAI_API_KEY \(set\) for provider openai-responses, model [^,]+, at https:\/\/api\.openai\.com\/v1$/,
    );
    assert.match(human.stdout, /^ok +model credentials +a session would use OPENAI_API_KEY \(set\)/m);
    // Human mode: aligned columns and a summary line.
    assert.match(human.stdout, /^ok {7}pty {16}a test command ran on a PTY/m);
    assert.match(human.stdout, /\n(all required checks passed|\d+ required check\(s\) failed: )[^\n]*\n$/);
  });

  test("run's model flags: a local or private-network server needs no key, as for run, and the line names what a session would use", () => {
    for (const [r, model, url] of [
      [runs.localFlags, "llama3.2", "http://localhost:11434/v1"],
      [runs.privateNet, "[^,]+", "http://192.168.1.20:8000/v1"],
    ] as const) {
      const creds = find(report(r), "model credentials");
      assert.equal(creds.status, "ok", creds.detail);
      assert.match(
        creds.detail,
        new RegExp(
          `^no key needed for provider openai-chat, model ${model}, at ${url.replace(/[./]/g, "\\$&")} \\(a local or private server; (OPENAI_API_KEY|LAN_KEY) is not set, so none is sent\\)$`,
        ),
      );
    }
    assert.equal(runs.badUrl.status, 2);
    assert.match(runs.badUrl.stderr, /^relay: .*base_url/);
  });

  test("without the API key the credentials check fails with the variable to set", () => {
    const r = runs.noKey;
    const rep = report(r);
    const creds = find(rep, "model credentials");
    assert.equal(creds.status, "missing");
    assert.equal(creds.required, true);
    assert.match(creds.detail, /OPENAI_API_KEY is not set/);
    assert.match(creds.fix ?? "", /export OPENAI_API_KEY=/);
    assert.ok(failedRequired(rep).includes("model credentials"));
    assert.equal(r.status, 1);
    const home = find(rep, "relay home");
    assert.equal(home.status, "ok");
    assert.match(home.detail, /did not exist: created it now/);
    assert.match(find(rep, "config").detail, /^no config\.toml: defaults/);
  });

  test("a broken config.toml is missing, with file:line", () => {
    const r = runs.broken;
    const rep = report(r);
    const config = find(rep, "config");
    assert.equal(config.status, "missing");
    assert.match(config.detail, /config\.toml:1/);
    assert.equal(config.required, true);
    assert.equal(r.status, 1);
  });

  test("a normal run: PTY, executor and code-mode host work, and the exit code follows the checks", () => {
    const r = runs.normal;
    const rep = report(r);
    for (const name of ["pty", "relay home", "config", "model credentials", "executor", "code-mode host"]) {
      const c = find(rep, name);
      assert.equal(c.status, "ok", `${name}: ${c.detail}`);
      assert.equal(c.required, true);
    }
    assert.match(find(rep, "executor").detail, /^relay \d+\.\d+\.\d+ \(bun(-compiled)?, .*pid \d+\)/);
    assert.match(find(rep, "code-mode host").detail, /pid \d+/);
    // What the executor reported: its container where the built-in sandbox runs, else what holds instead.
    const containment = find(rep, "containment");
    if (find(rep, "sandbox").detail.startsWith("landlock (built-in)"))
      assert.deepEqual(
        [containment.status, containment.detail],
        ["ok", "sandboxed commands run in the executor's pid namespace and end with it"],
      );
    else assert.equal(containment.status, "warn");
    assert.match(find(rep, "config").detail, /config\.toml$/, "the config that was read");
    // Only the host's sandbox can fail here; on a host that has one, everything passes.
    const sandbox = find(rep, "sandbox");
    assert.deepEqual(failedRequired(rep), sandbox.status === "ok" ? [] : ["sandbox"]);
    assert.equal(rep.ok, sandbox.status === "ok");
    assert.equal(r.status, rep.ok ? 0 : 1, r.stdout);
  });
});

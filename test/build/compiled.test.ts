import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { SkillsListOutputSchema } from "../../src/capabilities/skill-sources.ts";
import { EchoMethod, RelayEchoMethod } from "../../src/cli/rpc-echo.ts";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { VERSION } from "../../src/version.ts";
import { envWithoutSelfCommand as cleanEnv } from "../support/compiled.ts";
import { repoRunFixesTheTest } from "../support/infty-repo-run.ts";
import { assertGrammarApproval, loneCopy, scriptedToolResults } from "../support/lone-binary.ts";
import { fixtureToml, mcpFixtureCommand } from "../support/mcp.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { sharedRelay } from "../support/shared-relay.ts";
import { ENV_ROOT, envDir, executorIn, writeSkill } from "../support/skills.ts";

// Compiling needs Bun; the portable runs under Node and Deno skip this file's body.
const hasBun = Boolean(process.versions.bun);

describe("compiled relay binary", { skip: !hasBun && "needs Bun to compile" }, () => {
  let dir = "";
  let bin = "";
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "relay-build-"));
    bin = sharedRelay();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("prints its version and rejects unknown commands with exit 2, from any directory", () => {
    const v = spawnSync(bin, ["--version"], { cwd: "/", encoding: "utf8", env: cleanEnv() });
    assert.equal(v.status, 0);
    assert.equal(v.stdout.trim(), VERSION);
    const bad = spawnSync(bin, ["frobnicate"], { cwd: "/", encoding: "utf8", env: cleanEnv() });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown command 'frobnicate'/);
  });

  test('README\'s "Install the binary" block, run as written in an env -i shell with an empty home: install, --version, doctor, completion', () => {
    const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
    const section = readme.slice(
      readme.indexOf("## Install the binary"),
      readme.indexOf("\n## ", readme.indexOf("## Install the binary") + 3),
    );
    assert.ok(
      readme.indexOf("## Install the binary") < readme.indexOf("## Quick start"),
      "installing comes before the quick start",
    );
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block, "the section has a shell block");
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-readme-install-"));
    try {
      const home = path.join(machine, "home");
      mkdirSync(path.join(home, ".local", "bin"), { recursive: true });
      mkdirSync(path.join(machine, "dist"));
      copyFileSync(bin, path.join(machine, "dist", "relay"));
      const lines = block
        .split("\n")
        .map((l) => l.replace(/\s+#.*$/, "").trim())
        .filter(Boolean);
      assert.equal(lines[1], "relay --version", "the version is checked first");
      for (const line of lines) {
        // As a new user's shell: nothing but the basic PATH and ~/.local/bin, in the folder the binary was built in.
        const r = spawnSync(
          "env",
          ["-i", `HOME=${home}`, `PATH=${home}/.local/bin:/usr/bin:/bin`, "bash", "-c", line],
          { cwd: machine, encoding: "utf8" },
        );
        if (line === "relay doctor") {
          // No API key on this machine: that check alone may fail, and says what to do.
          const failed = /(\d+) required check\(s\) failed: (.*)/.exec(r.stdout);
          assert.ok(
            r.status === 0 || (r.status === 1 && failed?.[2]?.trim() === "model credentials"),
            `${line}: ${r.stdout}${r.stderr}`,
          );
        } else {
          assert.equal(r.status, 0, `${line}: ${r.stdout}${r.stderr}`);
        }
        if (line === "relay --version") assert.equal(r.stdout.trim(), VERSION);
      }
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("a lone copy with an empty home: the sandbox works with nothing installed", {
    skip: process.platform !== "linux" && "the built-in sandbox is Linux only",
  }, () => {
    const started = Date.now();
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-lone-"));
    try {
      const lone = loneCopy(bin, path.join(machine, "bin"));
      const home = path.join(machine, "home");
      const ws = path.join(home, "project");
      mkdirSync(path.join(ws, ".git"), { recursive: true });
      // Only what a fresh login has: no RELAY_HOME, no source tree, bubblewrap out of the picture.
      const env = { PATH: "/usr/bin:/bin", HOME: home, RELAY_SANDBOX_SIMULATE: "no-bwrap" };
      const run = (args: string[]) => spawnSync(lone, args, { cwd: ws, encoding: "utf8", env });
      const outside = path.join(home, "outside.txt");
      const refused = run(["sandbox", "--", "sh", "-c", `echo x > ${outside}`]);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /Permission denied/);
      assert.ok(!existsSync(outside));
      const inside = run([
        "sandbox",
        "--",
        "sh",
        "-c",
        "echo y > made.txt && cat made.txt && (echo z > .git/hook) 2>/dev/null || echo git-read-only",
      ]);
      assert.equal(inside.status, 0, inside.stderr);
      assert.equal(inside.stdout, "y\ngit-read-only\n");
      const check = run(["executor", "--check", "--json"]);
      assert.equal(check.status, 0, check.stderr);
      assert.match(check.stdout, /"sandboxed_command":\{"output":"ok","exit_code":0/);
      const doctor = run(["doctor", "--json"]);
      const report = JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> };
      const sandbox = report.checks.find((c) => c.name === "sandbox");
      assert.equal(sandbox?.status, "ok", sandbox?.detail);
      assert.match(sandbox?.detail ?? "", /^landlock/);
      // TinyCC's source is kept in one private directory per user, not one per compiling process.
      const own = `relay-cc-${process.getuid?.() ?? 0}`;
      const cc = readdirSync(os.tmpdir()).filter((f) => f.startsWith("relay-cc-"));
      assert.deepEqual(
        cc.filter((f) => f !== own && statSync(path.join(os.tmpdir(), f)).mtimeMs >= started),
        [],
        "no per-process compile leftovers in the temp dir",
      );
      assert.equal(statSync(path.join(os.tmpdir(), own)).mode & 0o777, 0o700);
      assert.ok(
        readdirSync(path.join(os.tmpdir(), own)).every((f) => /^(confine-[0-9a-f]{16}\.c|userns-ok)$/.test(f)),
        "only the hashed source and the user-namespace memo, no temp file",
      );
      // It packages itself for its own target, with no source tree or bun to compile with.
      const built = run(["package", "build", "--package-dir", path.join(machine, "pkg")]);
      assert.equal(built.status, 0, built.stderr);
      assert.match(built.stderr, /packaged the running binary itself/);
      const verified = run(["package", "verify", path.join(machine, "pkg")]);
      assert.equal(verified.status, 0, verified.stderr);
      const packaged = spawnSync(path.join(machine, "pkg", "bin", "relay"), ["--version"], { encoding: "utf8", env });
      assert.equal(packaged.stdout.trim(), VERSION);
      // Another target, offline and with nothing cached: refused, naming the file to place.
      const offline = { ...env, RELAY_NPM_REGISTRY: "http://127.0.0.1:1" };
      const refusedCross = spawnSync(
        lone,
        ["package", "build", "--target", "linux-arm64", "--package-dir", path.join(machine, "pkg-arm64")],
        { cwd: ws, encoding: "utf8", env: offline },
      );
      assert.equal(refusedCross.status, 1, refusedCross.stderr);
      const placed = path.join(
        home,
        ".relay",
        "cache",
        "bun",
        process.versions.bun!,
        "linux-arm64",
        `bun-linux-aarch64-${process.versions.bun}.tgz`,
      );
      assert.ok(
        refusedCross.stderr.includes(
          `Put http://127.0.0.1:1/@oven/bun-linux-aarch64/-/bun-linux-aarch64-${process.versions.bun}.tgz at ${placed}`,
        ),
        refusedCross.stderr,
      );
      assert.ok(!existsSync(path.join(machine, "pkg-arm64")), "nothing was left behind");
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("re-execs itself: the binary's child spawns the same binary again", async () => {
    const c = spawnPeer([bin, "rpc-echo"], { cwd: "/", env: cleanEnv(), name: "compiled" });
    assert.ok("ok" in c);
    assert.deepEqual(await c.ok.peer.call(EchoMethod, "hi"), { ok: "hi" });
    const r = await c.ok.peer.call(RelayEchoMethod, { through: "grandchild" });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.deepEqual(r.ok.echoed, { through: "grandchild" });
    assert.notEqual(r.ok.childPid, r.ok.selfPid);
    const exit = await c.ok.shutdown();
    assert.equal(exit.code, 0);
  });

  test("a lone copy with an empty home reads commands with its embedded bash grammar under -a untrusted, and so does the package it builds of itself", () => {
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-lone-approval-"));
    try {
      const lone = loneCopy(bin, path.join(machine, "bin"));
      const env = { PATH: "/usr/bin:/bin", HOME: path.join(machine, "home") };
      assertGrammarApproval(lone, path.join(machine, "one"), env);
      const built = spawnSync(lone, ["package", "build", "--package-dir", path.join(machine, "pkg")], {
        cwd: machine,
        encoding: "utf8",
        env,
      });
      assert.equal(built.status, 0, built.stderr);
      assertGrammarApproval(path.join(machine, "pkg", "bin", "relay"), path.join(machine, "two"), env);
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("a lone copy with an empty home calls MCP tools: a config.toml stdio server (the bundled SDK) and a capability root's .mcp.json server through its executor, with a restart", () => {
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-lone-mcp-"));
    try {
      const lone = loneCopy(bin, path.join(machine, "bin"));
      const home = path.join(machine, "home");
      const root = path.join(machine, "root");
      mkdirSync(path.join(home, ".relay"), { recursive: true });
      mkdirSync(path.join(root, "bin"), { recursive: true });
      const fixture = mcpFixtureCommand();
      writeFileSync(path.join(home, ".relay", "config.toml"), fixtureToml("srv"));
      writeFileSync(
        path.join(root, "bin", "fx"),
        `#!/bin/sh\nexec ${JSON.stringify(fixture.command)} ${fixture.args.map((a) => JSON.stringify(a)).join(" ")} "$@"\n`,
      );
      chmodSync(path.join(root, "bin", "fx"), 0o755);
      writeFileSync(
        path.join(root, ".mcp.json"),
        JSON.stringify({
          mcpServers: { tools: { command: "bin/fx", args: ["--name", "tools"], env: { FIXTURE_MODE: "lone" } } },
        }),
      );
      const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });
      const script = {
        turns: [
          { tool_calls: [call("srv__echo", { text: "lone" }), call("tools__where"), call("srv__crash")] },
          { tool_calls: [call("srv__echo", { text: "again" })] },
          { text: "done" },
        ],
      };
      writeFileSync(path.join(machine, "script.json"), JSON.stringify(script));
      const results = scriptedToolResults(
        lone,
        path.join(machine, "script.json"),
        ["-a", "never", "-s", "danger-full-access", "--capability-root", `local:${root}`, "go"],
        { cwd: machine, env: { PATH: "/usr/bin:/bin", HOME: home } },
      );
      // Read-only calls of one turn run together: their results come in either order.
      assert.deepEqual(results.map((e) => [e.name, e.output?.split("\n")[0]]).sort(), [
        ["srv__crash", "MCP server srv exited (code 3): fixture srv ready"],
        ["srv__echo", "echo: again"],
        ["srv__echo", "echo: lone"],
        ["tools__where", JSON.stringify({ cwd: root, mode: "lone" })],
      ]);
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("a lone copy with an empty home serves relay infty serve: the embedded page and the API; Ctrl-C ends it with 0", async () => {
    const home = path.join(dir, "serve-home");
    mkdirSync(home);
    const lone = loneCopy(bin, path.join(dir, "serve-lone"));
    const child = spawn(lone, ["infty", "serve", "--port", "0"], {
      cwd: "/",
      env: { PATH: "/usr/bin:/bin", HOME: home },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let stderr = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr!.setEncoding("utf8").on("data", (d: string) => {
        stderr += d;
        const m = /open (http:\/\/127\.0\.0\.1:\d+)\//.exec(stderr);
        if (m) resolve(m[1]!);
      });
      child.once("exit", () => reject(new Error(`relay infty serve ended: ${stderr}`)));
    });
    assert.match(stderr, new RegExp(`runs in ${home}/\\.relay/infty`));
    const runs = await fetch(`${url}/api/runs`);
    assert.deepEqual(await runs.json(), { runs: [], warnings: [] });
    const page = await fetch(`${url}/`);
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.match(await page.text(), /src="\/app\.js"/);
    assert.ok((await (await fetch(`${url}/app.js`)).text()).length > 1000, "the page's script is embedded");
    child.kill("SIGINT");
    assert.equal(await exited, 0);
  });

  test("a lone copy with an empty home fixes a repository's failing test with relay infty run -C, under the default sandbox", {
    skip: process.platform !== "linux" && "the default sandbox is Linux only",
  }, async () => {
    const home = path.join(dir, "repo-run-home");
    mkdirSync(home);
    const lone = loneCopy(bin, path.join(dir, "repo-run-lone"));
    await repoRunFixesTheTest([lone], { PATH: "/usr/bin:/bin", HOME: home, RELAY_SANDBOX_SIMULATE: "no-bwrap" });
  });

  test("its executor's file tools glob with picomatch and read .gitignore with ignore (both bundled)", async () => {
    const ws = mkdtempSync(path.join(os.tmpdir(), "relay-files-compiled-"));
    try {
      mkdirSync(path.join(ws, ".git"));
      mkdirSync(path.join(ws, "src", "gen"), { recursive: true });
      writeFileSync(path.join(ws, ".gitignore"), "gen/\n");
      for (const f of ["src/a.ts", "src/b.tsx", "src/c.js", "src/gen/d.ts"])
        writeFileSync(path.join(ws, f), "needle\n");
      const ex = spawnPeer([bin, "executor"], { cwd: ws, env: cleanEnv(), name: "compiled-files" });
      assert.ok("ok" in ex);
      try {
        const call = (args: Record<string, unknown>) =>
          ex.ok.peer.call(ExecutorMethods.toolsCall, {
            name: "grep_files",
            arguments: { pattern: "needle", ...args },
            cwd: ws,
          });
        const r = await call({ include: "src/**/*.{ts,tsx}" });
        assert.ok("ok" in r, JSON.stringify(r));
        assert.deepEqual(r.ok.text.split("\n").sort(), [path.join(ws, "src", "a.ts"), path.join(ws, "src", "b.tsx")]);
        const bad = await call({ include: "*.{ts" });
        assert.ok("error" in bad && bad.error.code === "invalid_arguments", JSON.stringify(bad));
      } finally {
        await ex.ok.shutdown();
      }
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  test("a packaged executor's commands find this relay first on PATH, then the package's relay-path tools", {
    skip: process.platform !== "linux" && "Linux packages only",
  }, async () => {
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-pkg-path-"));
    try {
      const pkg = path.join(machine, "pkg");
      const env = { PATH: "/usr/bin:/bin", HOME: machine };
      // Any executable of the host's format stands in for ripgrep.
      const built = spawnSync(bin, ["package", "build", "--package-dir", pkg, "--rg-bin", realpathSync("/bin/true")], {
        cwd: machine,
        encoding: "utf8",
        env,
      });
      assert.equal(built.status, 0, built.stderr);
      const ex = spawnPeer([path.join(pkg, "bin", "relay"), "executor"], { cwd: machine, env, name: "packaged" });
      assert.ok("ok" in ex);
      try {
        const r = await ex.ok.peer.call(ExecutorMethods.exec, {
          command: ["sh", "-c", "command -v relay; command -v rg; relay --version"],
          cwd: machine,
          env: { PATH: "/usr/bin:/bin" },
        });
        assert.ok("ok" in r, JSON.stringify(r));
        const [relayAt, rgAt, version] = r.ok.output.trim().split("\n");
        assert.equal(realpathSync(relayAt!), realpathSync(path.join(pkg, "bin", "relay")));
        assert.equal(rgAt, path.join(pkg, "relay-path", "rg"));
        assert.equal(version, VERSION);
      } finally {
        await ex.ok.shutdown();
      }
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("skills on an extra environment: the binary started over a pipe as ssh would, from an empty home", {
    skip: process.platform !== "linux" && "a root at /proc/self/cwd needs Linux's /proc",
  }, async () => {
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-skills-compiled-"));
    const env = envDir();
    try {
      writeSkill(env.skills, "deploy", { body: "COMPILED-ENV-BODY\n" });
      const home = path.join(machine, "home");
      mkdirSync(home);
      const clean = { PATH: "/usr/bin:/bin", HOME: home };
      const build = `build=${executorIn(env.dir, [bin])}`;
      const root = `id=deploy@1,env=build,path=${ENV_ROOT}`;
      const list = spawnSync(bin, ["skills", "list", "--json", "--environment", build, "--capability-root", root], {
        cwd: machine,
        encoding: "utf8",
        env: clean,
      });
      assert.equal(list.status, 0, list.stderr);
      const out = SkillsListOutputSchema.parse(JSON.parse(list.stdout));
      assert.deepEqual(
        out.skills.map((k) => [k.name, k.source]),
        [["deploy", { kind: "environment", environmentId: "build", rootId: "deploy@1" }]],
      );
      const script = path.join(machine, "script.json");
      writeFileSync(
        script,
        JSON.stringify({
          turns: [{ tool_calls: [{ name: "skill", arguments: { name: "deploy" } }] }, { text: "done" }],
        }),
      );
      const results = scriptedToolResults(
        bin,
        script,
        ["--sandbox", "danger-full-access", "--no-memories", "--environment", build, "--capability-root", root, "go"],
        { cwd: machine, env: clean },
      );
      assert.equal(results.length, 1);
      assert.equal(results[0]!.name, "skill");
      assert.ok(results[0]!.success, results[0]!.output);
      assert.match(results[0]!.output ?? "", /COMPILED-ENV-BODY/);
    } finally {
      for (const d of [machine, env.dir]) rmSync(d, { recursive: true, force: true });
    }
  });
});

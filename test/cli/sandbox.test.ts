/** `relay sandbox` as a user runs it: the real CLI, real commands, real sockets. */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();
const builtin = skipBecause(
  "relay sandbox",
  support.landlock && support.landlock.abi >= 3
    ? false
    : `the built-in sandbox cannot run here: ${support.landlock?.detail ?? support.detail}`,
);

describe("relay sandbox", { skip: builtin }, () => {
  let base = "";
  let ws = "";
  let server: net.Server;
  let port = 0;
  let connections = 0;
  before(async () => {
    base = mkdtempSync(path.join(os.tmpdir(), "relay-sandbox-cli-"));
    ws = path.join(base, "ws");
    mkdirSync(ws);
    server = net.createServer((s) => {
      connections++;
      s.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    rmSync(base, { recursive: true, force: true });
  });
  const env = () => ({ ...process.env, RELAY_SANDBOX_SIMULATE: "no-bwrap" });
  const sandbox = (args: string[], e: NodeJS.ProcessEnv = env()) => runRelayAsync(["sandbox", ...args], e);

  test("a write to /tmp outside the workspace is refused; the same write with -C into it works", async () => {
    const target = path.join(base, "outside.txt");
    const refused = await sandbox(["-C", ws, "--", "sh", "-c", `echo x > ${target}`]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /Permission denied/);
    assert.ok(!existsSync(target));
    const allowed = await sandbox(["-C", base, "--", "sh", "-c", `echo x > ${target} && echo wrote`]);
    assert.equal(allowed.status, 0, allowed.stderr);
    assert.equal(allowed.stdout, "wrote\n");
    assert.equal(readFileSync(target, "utf8"), "x\n");
  });

  test("--tmp adds the temp directories, as relay run's sessions have them", async () => {
    const target = path.join(base, "via-tmp.txt");
    const r = await sandbox(["--tmp", "-C", ws, "--", "sh", "-c", `echo y > ${target} && echo ok`]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(target, "utf8"), "y\n");
  });

  test("a TCP connect to a loopback listener fails by default and works with --network", async () => {
    const probe = ["bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`];
    const off = await sandbox(["-C", ws, "--", ...probe]);
    assert.notEqual(off.status, 0);
    assert.equal(off.stdout, "");
    assert.equal(connections, 0);
    const on = await sandbox(["-C", ws, "--network", "--", ...probe]);
    assert.equal(on.status, 0, on.stderr);
    assert.equal(on.stdout, "connected\n");
    assert.equal(connections, 1);
  });

  test("the exit status is the command's; options after the command are its own; 127 when it is missing", async () => {
    const r = await sandbox(["-C", ws, "sh", "-c", "echo $0-$1; exit 9", "zero", "-x"]);
    assert.equal(r.status, 9);
    assert.equal(r.stdout, "zero--x\n");
    const missing = await sandbox(["-C", ws, "--", "relay-no-such-command"]);
    assert.equal(missing.status, 127);
    assert.match(missing.stderr, /relay-no-such-command: command not found/);
  });

  test("read-only refuses writes even in the workspace", async () => {
    const r = await sandbox(["-s", "read-only", "-C", ws, "--", "sh", "-c", "echo x > in-ws.txt"]);
    assert.notEqual(r.status, 0);
    assert.ok(!existsSync(path.join(ws, "in-ws.txt")));
  });

  test("a kernel without Landlock and no bubblewrap: refused with 126, the missing feature and the choices", async () => {
    const target = path.join(ws, "never.txt");
    const r = await sandbox(["-C", ws, "--", "touch", target], {
      ...process.env,
      RELAY_SANDBOX_SIMULATE: "landlock-abi=0,no-bwrap",
    });
    assert.equal(r.status, 126);
    assert.match(r.stderr, /cannot be applied on this host: .*Landlock.*simulated/);
    assert.match(r.stderr, /danger-full-access/);
    assert.match(r.stderr, /bubblewrap/);
    assert.ok(!existsSync(target), "the command was not run");
  });

  test("best effort on an old Landlock ABI runs and says what it does not enforce", async () => {
    const r = await sandbox(["--sandbox-best-effort", "-C", ws, "--", "sh", "-c", "echo ran"], {
      ...process.env,
      RELAY_SANDBOX_SIMULATE: "landlock-abi=2,no-bwrap",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, "ran\n");
    assert.match(r.stderr, /relay sandbox: not enforced: Landlock ABI 3 for truncate control/);
  });

  test("a .git in the workspace without user namespaces is refused, unless best effort says .git stays writable", async () => {
    const repo = path.join(base, "repo");
    mkdirSync(path.join(repo, ".git"), { recursive: true });
    const sim = { ...process.env, RELAY_SANDBOX_SIMULATE: "no-userns,no-bwrap" };
    const refused = await sandbox(["-C", repo, "--", "sh", "-c", "echo ran"], sim);
    assert.equal(refused.status, 126);
    assert.match(refused.stderr, /user namespaces, to keep \.git read-only/);
    const weak = await sandbox(["--best-effort", "-C", repo, "--", "sh", "-c", "echo ran"], sim);
    assert.equal(weak.status, 0, weak.stderr);
    assert.match(weak.stderr, /not enforced: unprivileged user namespaces/);
  });

  test("--explain prints the rules without running the command", async () => {
    const r = await sandbox(["--explain", "-C", ws, "--", "touch", path.join(ws, "explained")]);
    assert.equal(r.status, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as {
      mechanism: string;
      rules: Array<{ path: string; allowed: string[] }>;
      network: string;
    };
    assert.equal(plan.mechanism, "landlock");
    const root = plan.rules.find((x) => x.path === ws);
    assert.ok(root?.allowed.includes("make_reg") && !root.allowed.includes("make_char"), JSON.stringify(plan.rules));
    assert.match(plan.network, /^off/);
    assert.ok(!existsSync(path.join(ws, "explained")));
  });

  test("--explain lists a named Unix socket outside the workspace as hidden, and not with --network; the command cannot reach it", async () => {
    const outside = mkdtempSync(path.join(os.homedir(), ".relay-sandbox-sock-"));
    const sock = path.join(outside, "daemon.sock");
    let hits = 0;
    const unix = net.createServer((c) => {
      hits++;
      c.end();
    });
    await new Promise<void>((r) => unix.listen(sock, r));
    try {
      const explained = await sandbox(["--explain", "-C", ws, "--", "true"]);
      assert.ok(
        (JSON.parse(explained.stdout) as { hidden_sockets: string[] }).hidden_sockets.includes(sock),
        explained.stdout,
      );
      const networked = await sandbox(["--explain", "--network", "-C", ws, "--", "true"]);
      assert.deepEqual((JSON.parse(networked.stdout) as { hidden_sockets: string[] }).hidden_sockets, []);
      const probe = `require('net').connect(process.argv[1]).on('connect',()=>{console.log('connected');process.exit()}).on('error',e=>console.log(e.code))`;
      const r = await sandbox(["-C", ws, "--", "node", "-e", probe, sock]);
      assert.equal(r.stdout, "ECONNREFUSED\n", r.stderr);
      assert.equal(hits, 0);
    } finally {
      await new Promise((r) => unix.close(r));
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test("bad usage exits 2", async () => {
    for (const flag of ["-s", "--sandbox", "--mode"]) {
      const r = await sandbox([flag, "wide-open", "--", "true"]);
      assert.equal(r.status, 2, flag);
      assert.match(r.stderr, /wide-open/);
    }
  });

  test("run's spellings are the primary flags; the old ones are kept as aliases and out of --help", async () => {
    const explained = async (args: string[]) =>
      JSON.parse((await sandbox([...args, "--explain", "-C", ws, "--", "true"])).stdout) as {
        rules: Array<{ path: string; allowed: string[] }>;
        network: string;
      };
    for (const args of [
      ["--sandbox", "read-only"],
      ["--mode", "read-only"],
    ]) {
      const plan = await explained(args);
      assert.ok(!plan.rules.some((r) => r.path === ws), `${args.join(" ")}: the workspace is not writable`);
    }
    const help = await sandbox(["--help"]);
    assert.match(help.stdout, /-s, --sandbox <mode>/);
    assert.match(help.stdout, /--sandbox-mechanism <mechanism>/);
    assert.match(help.stdout, /--sandbox-best-effort/);
    assert.doesNotMatch(
      help.stdout,
      /^ +(--mode <mode>|--mechanism <mechanism>|--best-effort )/m,
      "not listed as options",
    );
  });
});

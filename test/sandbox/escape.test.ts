/**
 * The escape suite: real commands through a real executor try to get out of the sandbox, under
 * workspace-write and read-only, with every mechanism this host has. Each case asserts the
 * denial *and* that nothing changed on disk; the allowed side checks that ordinary work runs.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import dgram from "node:dgram";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { SandboxMechanism, SandboxMode, SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import { orchestratorPaths } from "../../src/infty/role-workspace.ts";
import { type ChildPeer, spawnPeer } from "../../src/protocol/child.ts";
import { probeBwrap } from "../../src/sandbox/bwrap.ts";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { envWithoutSelfCommand } from "../support/compiled.ts";
import { exec, isAlive, startExecutor, waitUntil, write } from "../support/executor.ts";
import { LONG_TESTS } from "../support/long.ts";
import { sharedRelay } from "../support/shared-relay.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();
const bwrap = process.platform === "linux" ? probeBwrap() : { works: false, detail: "not Linux" };
/** The system's python3 where there is one: a version manager's shim on PATH takes 0.3 s to start it. */
const python = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => existsSync(p)) ?? "python3";
const hasPython = spawnSync(python, ["-c", "0"]).status === 0;
const hasUmount = spawnSync("sh", ["-c", "command -v umount"]).status === 0;
const hostNetNs = readlinkSync("/proc/self/ns/net");
const FULL_ACCESS: SandboxPolicy = { mode: "danger-full-access", writable_roots: [], network: true };
const baseEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.homedir() };

const builtinSkip =
  support.landlock && support.landlock.abi >= 3
    ? false
    : `the built-in sandbox cannot run here: ${support.landlock?.detail ?? support.detail}`;
/**
 * Each way a command gets confined. A pipe-mode command is forked by the executor's container
 * init (confine.c relay_spawn_child); a PTY one, or any where the init may not spawn
 * (`no-init-spawn`, in the executor's env), goes through a helper. The compiled binary's helper
 * is single-threaded and confines itself in place; from source Bun has transpiler threads, so
 * its helper forks (confine.c relay_spawn_ns), which `simulate: "threaded"` also forces.
 * `simulate` reaches the helper through the command's env.
 */
const compiledSkip = builtinSkip || (!process.versions.bun && "compiling relay needs Bun");
const helpersOnly = { RELAY_SANDBOX_SIMULATE: "no-init-spawn" };
/** A fallback mechanism's suite is long: about 5 s of CPU each on 2 cores. */
const fallbackSkip = (label: string) =>
  LONG_TESTS
    ? false
    : `a long suite (the escape suite again, under the fallback ${label}), run by .ci/run as its own step; set RELAY_LONG_TESTS=1 to run it here`;
const mechanisms: Array<{
  name: SandboxMechanism;
  label: string;
  compiled?: boolean;
  simulate?: string;
  executorEnv?: Record<string, string>;
  skip: string | false;
}> = [
  {
    name: "landlock",
    label: "landlock, compiled binary: the container's init spawns",
    compiled: true,
    skip: compiledSkip,
  },
  // The fallbacks run in .ci/run's long step; npm test runs the default mechanism above.
  {
    name: "landlock",
    label: "landlock, compiled binary: helpers confine in place",
    compiled: true,
    executorEnv: helpersOnly,
    skip: fallbackSkip("helpers confine in place") || compiledSkip,
  },
  {
    name: "landlock",
    label: "landlock, forked helper",
    simulate: "threaded",
    executorEnv: helpersOnly,
    skip: fallbackSkip("forked helper") || builtinSkip,
  },
  {
    name: "bwrap",
    label: "bwrap",
    skip: fallbackSkip("bwrap") || (bwrap.works ? false : `bubblewrap is optional and unusable here: ${bwrap.detail}`),
  },
];
for (const m of mechanisms) skipBecause(`escape suite (${m.label})`, m.skip);

/** A loopback listener that counts connections and datagrams, to prove none arrived. */
async function listeners() {
  let tcpHits = 0;
  let udpHits = 0;
  const tcp = net.createServer((s) => {
    tcpHits++;
    s.end("hello\n");
  });
  await new Promise<void>((r) => tcp.listen(0, "127.0.0.1", r));
  const udp = dgram.createSocket("udp4");
  udp.on("message", () => udpHits++);
  await new Promise<void>((r) => udp.bind(0, "127.0.0.1", r));
  return {
    tcpPort: (tcp.address() as net.AddressInfo).port,
    udpPort: udp.address().port,
    hits: () => ({ tcp: tcpHits, udp: udpHits }),
    reset: () => {
      tcpHits = 0;
      udpHits = 0;
    },
    close: () => Promise.all([new Promise((r) => tcp.close(r)), new Promise((r) => udp.close(() => r(null)))]),
  };
}

/** A node one-liner run in the sandbox: `named:connected`, or `named:<error code>`. */
const connectProbe = (sock: string) =>
  `node -e "require('net').connect(process.argv[1]).on('connect',()=>{console.log('named:connected');process.exit()}).on('error',e=>console.log('named:'+e.code))" ${sock}`;

/** A listener on the named socket `sock` in this process, counting connections. */
async function unixServer(sock: string) {
  let hits = 0;
  const server = net.createServer((c) => {
    hits++;
    c.end();
  });
  await new Promise<void>((r) => server.listen(sock, r));
  return { hits: () => hits, close: () => new Promise((r) => server.close(r)) };
}

for (const mechanism of mechanisms) {
  describe(`escape suite (${mechanism.label})`, { skip: mechanism.skip }, () => {
    const env: Record<string, string> = {
      ...baseEnv,
      ...(mechanism.simulate ? { RELAY_SANDBOX_SIMULATE: mechanism.simulate } : {}),
    };
    let ex: ChildPeer;
    let base = "";
    let ws = "";
    let out = "";
    let net0: Awaited<ReturnType<typeof listeners>>;
    before(async () => {
      if (mechanism.compiled) {
        const c = spawnPeer([sharedRelay(), "executor"], {
          env: envWithoutSelfCommand(mechanism.executorEnv),
          name: "compiled-executor",
        });
        assert.ok("ok" in c, JSON.stringify(c));
        ex = c.ok;
      } else {
        ex = await startExecutor(mechanism.executorEnv);
      }
      base = mkdtempSync(path.join(os.homedir(), ".relay-escape-"));
      ws = path.join(base, "ws");
      out = path.join(base, "outside");
      mkdirSync(path.join(ws, ".git", "hooks"), { recursive: true });
      mkdirSync(path.join(ws, ".checkpoints.git", "refs", "heads"), { recursive: true });
      writeFileSync(path.join(ws, ".checkpoints.git", "refs", "heads", "checkpoints"), "0".repeat(40) + "\n");
      mkdirSync(out);
      writeFileSync(path.join(ws, ".git", "config"), "[core]\n");
      writeFileSync(path.join(ws, "file.txt"), "workspace file\n");
      writeFileSync(path.join(out, "existing.txt"), "keep me\n");
      symlinkSync(path.join(out, "via-link.txt"), path.join(ws, "link-to-outside"));
      symlinkSync(out, path.join(ws, "dir-link"));
      net0 = await listeners();
    });
    after(async () => {
      await ex.shutdown();
      await net0.close();
      rmSync(base, { recursive: true, force: true });
    });

    const policy = (mode: SandboxMode): SandboxPolicy => ({
      mode,
      writable_roots: [ws],
      network: false,
      mechanism: mechanism.name,
    });
    /** A command's $PPID in the container: its init, or 0 for a helper outside the namespace. */
    const parentPid = mechanism.executorEnv ? 0 : 1;
    const run = (mode: SandboxMode, script: string, extra: { tty?: boolean; yield_time_ms?: number } = {}) =>
      exec(ex, {
        command: ["bash", "-c", script],
        cwd: ws,
        env,
        sandbox: policy(mode),
        yield_time_ms: 20_000,
        ...extra,
      });

    const untouched = () => {
      assert.equal(
        readFileSync(path.join(out, "existing.txt"), "utf8"),
        "keep me\n",
        "the file outside still has its content",
      );
      assert.equal(readFileSync(path.join(ws, ".git", "config"), "utf8"), "[core]\n", ".git/config is unchanged");
      assert.equal(readFileSync(path.join(ws, "file.txt"), "utf8"), "workspace file\n");
    };
    const absent = (...names: string[]) => {
      for (const n of names) assert.ok(!existsSync(n) && !isLink(n), `${n} must not exist`);
    };
    const isLink = (p: string) => {
      try {
        return lstatSync(p).isSymbolicLink();
      } catch {
        return false;
      }
    };

    for (const mode of ["workspace-write", "read-only"] as const) {
      describe(mode, () => {
        test("writing outside the roots directly, through a symlink, or into a linked directory is refused", async () => {
          const r = await run(
            mode,
            `echo x > ${out}/direct.txt; echo "direct:$?"; echo x > link-to-outside; echo "link:$?"; echo x > dir-link/in-dir.txt; echo "dirlink:$?"`,
          );
          assert.match(r.output, /direct:1\n[\s\S]*link:1\n[\s\S]*dirlink:1\n/);
          absent(path.join(out, "direct.txt"), path.join(out, "via-link.txt"), path.join(out, "in-dir.txt"));
          untouched();
        });

        test("renaming or hard-linking a workspace file out of the workspace is refused", async () => {
          const r = await run(
            mode,
            `mv file.txt ${out}/moved.txt 2>/dev/null; echo "mv:$?"; ln file.txt ${out}/hard.txt 2>/dev/null; echo "ln:$?"; ln -s /etc/passwd ${out}/sym 2>/dev/null; echo "symlink:$?"`,
          );
          assert.match(r.output, /mv:1\n[\s\S]*ln:1\n[\s\S]*symlink:1\n/);
          absent(path.join(out, "moved.txt"), path.join(out, "hard.txt"), path.join(out, "sym"));
          assert.ok(existsSync(path.join(ws, "file.txt")));
          untouched();
        });

        test("truncating a file outside is refused, by truncate(2) and by O_TRUNC", async () => {
          const r = await run(
            mode,
            `truncate -s 0 ${out}/existing.txt 2>/dev/null; echo "truncate:$?"; : > ${out}/existing.txt; echo "otrunc:$?"`,
          );
          assert.match(r.output, /truncate:1\n[\s\S]*otrunc:1\n/);
          untouched();
        });

        test("making a fifo outside, or a device node anywhere, is refused", async () => {
          const r = await run(
            mode,
            `mkfifo ${out}/fifo 2>/dev/null; echo "fifo:$?"; mknod ${out}/null-dev c 1 3 2>/dev/null; echo "mknod-out:$?"; mknod ws-dev c 1 3 2>/dev/null; echo "mknod-ws:$?"`,
          );
          assert.match(r.output, /fifo:1\n[\s\S]*mknod-out:1\n[\s\S]*mknod-ws:1\n/);
          absent(path.join(out, "fifo"), path.join(out, "null-dev"), path.join(ws, "ws-dev"));
        });

        test(".git inside the workspace stays read-only: hooks, config, rename into it", async () => {
          const r = await run(
            mode,
            `echo 'touch /tmp/pwned' > .git/hooks/pre-commit 2>/dev/null; echo "hook:$?"; echo '[core] hooksPath=/tmp' >> .git/config 2>/dev/null; echo "config:$?"; cp file.txt evil && mv evil .git/hooks/post-checkout 2>/dev/null; echo "mv-in:$?"; rm -rf .git 2>/dev/null; echo "rm:$?"`,
          );
          assert.match(r.output, /hook:1\n[\s\S]*config:1\n[\s\S]*mv-in:1\n[\s\S]*rm:1\n/);
          absent(path.join(ws, ".git", "hooks", "pre-commit"), path.join(ws, ".git", "hooks", "post-checkout"));
          assert.ok(existsSync(path.join(ws, ".git", "hooks")));
          rmSync(path.join(ws, "evil"), { force: true });
          untouched();
        });

        test("unmounting the read-only .git is refused, and the next command finds it read-only still", {
          skip: !hasUmount && "umount is not installed",
        }, async () => {
          // Commands share one kept mount namespace: one that could unmount the bind would open .git to the next.
          const r = await run(
            mode,
            `umount -l .git 2>/dev/null; echo "umount:$?"; (echo x > .git/y) 2>/dev/null; echo "write:$?"`,
          );
          assert.match(r.output, /umount:[1-9][0-9]*\nwrite:1\n/);
          const next = await run(mode, `(echo x > .git/y) 2>/dev/null; echo "write:$?"`);
          assert.equal(next.output, "write:1\n");
          absent(path.join(ws, ".git", "y"));
        });

        test(".git stays read-only to a command whose cwd is inside it", async () => {
          const r = await exec(ex, {
            command: [
              "bash",
              "-c",
              `(echo z > hooks/pre-commit) 2>/dev/null; echo "hook:$?"; (echo z >> config) 2>/dev/null; echo "config:$?"; pwd`,
            ],
            cwd: path.join(ws, ".git"),
            env,
            sandbox: policy(mode),
            yield_time_ms: 20_000,
          });
          assert.equal(r.output, `hook:1\nconfig:1\n${path.join(ws, ".git")}\n`);
          absent(path.join(ws, ".git", "hooks", "pre-commit"));
          untouched();
        });

        test("an infty run's .checkpoints.git stays read-only to its roles' commands", async () => {
          const r = await run(
            mode,
            `echo evil > .checkpoints.git/refs/heads/checkpoints 2>/dev/null; echo "ref:$?"; rm -rf .checkpoints.git 2>/dev/null; echo "rm:$?"`,
          );
          assert.match(r.output, /ref:1\n[\s\S]*rm:1\n/);
          assert.equal(
            readFileSync(path.join(ws, ".checkpoints.git", "refs", "heads", "checkpoints"), "utf8"),
            "0".repeat(40) + "\n",
          );
          untouched();
        });

        test("an infty role: the orchestrator's files stay read-only though a writable root holds the run store; the model's own parts are writable", async () => {
          const store = path.join(ws, "store");
          const own: Record<string, string> = {
            "run.json": "{}\n",
            "events.jsonl": "{}\n",
            "lease.json": "{}\n",
            "index/claims.json": "{}\n",
            "memory/verifications.jsonl": "{}\n",
          };
          for (const [rel, text] of Object.entries({ ...own, "index/README.md": "# index\n", "artifacts/.keep": "" })) {
            mkdirSync(path.dirname(path.join(store, rel)), { recursive: true });
            writeFileSync(path.join(store, rel), text);
          }
          const role: SandboxPolicy = {
            ...policy(mode),
            writable_roots: [ws],
            read_only_paths: orchestratorPaths(store),
          };
          const files = Object.keys(own).join(" ");
          const script = [
            `cd store; for f in ${files}; do (echo x >> $f) 2>/dev/null; echo "append $f:$?"; (: > $f) 2>/dev/null; echo "trunc $f:$?"; rm -f $f 2>/dev/null; echo "rm $f:$?"; done`,
            `(echo forged > /tmp/relay-escape-forged-$$.json; mv /tmp/relay-escape-forged-$$.json run.json) 2>/dev/null; echo "mv-over:$?"; rm -f /tmp/relay-escape-forged-$$.json`,
            `(echo "- a" >> index/README.md) 2>/dev/null; echo "readme:$?"; (echo a > artifacts/a.txt) 2>/dev/null; echo "artifact:$?"`,
          ].join("; ");
          const r = await exec(ex, {
            command: ["bash", "-c", script],
            cwd: ws,
            env,
            sandbox: role,
            yield_time_ms: 20_000,
          });
          const writable = mode === "workspace-write";
          for (const f of Object.keys(own))
            assert.match(r.output, new RegExp(`append ${f}:1\ntrunc ${f}:1\nrm ${f}:[01]\n`), r.output);
          assert.match(r.output, /mv-over:1\n/);
          assert.match(r.output, writable ? /readme:0\nartifact:0\n/ : /readme:1\nartifact:1\n/);
          for (const [rel, text] of Object.entries(own))
            assert.equal(readFileSync(path.join(store, rel), "utf8"), text, `${rel} is unchanged`);
          rmSync(store, { recursive: true, force: true });
          untouched();
        });

        // The built-in sandbox refuses sockets (EPERM); bubblewrap gives the command a network
        // namespace of its own instead, so what it binds or sends never reaches the host.
        const refusesSockets = mechanism.name === "landlock";

        test("TCP connect to and bind on loopback are refused, and no connection arrives", async () => {
          const script = [
            `(exec 3<>/dev/tcp/127.0.0.1/${net0.tcpPort}) 2>/dev/null; echo "connect:$?"`,
            `node -e "require('net').createServer().on('error',e=>console.log('bind:'+e.code)).listen(0,'127.0.0.1',()=>{console.log('bind:ok');process.exit()})"`,
            `node -e "require('net').connect(${net0.tcpPort},'127.0.0.1').on('connect',()=>{console.log('nodeconnect:ok');process.exit()}).on('error',e=>console.log('nodeconnect:'+e.code))"`,
            "readlink /proc/self/ns/net",
          ].join("; ");
          const r = await run(mode, script);
          assert.match(r.output, /connect:1\n/);
          if (refusesSockets) {
            assert.match(r.output, /bind:(EPERM|EACCES)\n/);
            assert.match(r.output, /nodeconnect:(EPERM|EACCES)\n/);
          } else {
            assert.match(r.output, /nodeconnect:ECONNREFUSED\n/);
            assert.ok(!r.output.includes(hostNetNs), "a private network namespace");
          }
          assert.equal(net0.hits().tcp, 0);
          const control = await exec(ex, { command: ["bash", "-c", script], cwd: ws, env, sandbox: FULL_ACCESS });
          assert.match(
            control.output,
            /connect:0\n[\s\S]*nodeconnect:ok\n/,
            "the same probes connect without a sandbox",
          );
          assert.equal(net0.hits().tcp, 2);
          net0.reset();
        });

        test("UDP send is refused and nothing arrives", async () => {
          const probe = `node -e "const s=require('dgram').createSocket('udp4');s.on('error',e=>{console.log('udp:'+e.code);process.exit()});s.send('x',${net0.udpPort},'127.0.0.1',e=>{console.log('udp:'+(e?e.code:'sent'));process.exit()})"; readlink /proc/self/ns/net`;
          const r = await run(mode, probe);
          if (refusesSockets) assert.match(r.output, /udp:(EPERM|EACCES)\n/);
          else assert.ok(!r.output.includes(hostNetNs), "a private network namespace");
          assert.equal(net0.hits().udp, 0);
          const control = await exec(ex, { command: ["bash", "-c", probe], cwd: ws, env, sandbox: FULL_ACCESS });
          assert.match(control.output, /udp:sent\n/, "the same probe sends without a sandbox");
          assert.ok(await waitUntil(() => net0.hits().udp === 1), "and its datagram arrives");
          net0.reset();
        });

        test("a netlink socket is refused (or, under bubblewrap, sees only its own namespace)", {
          skip: !hasPython && "python3 is not installed (it opens the AF_NETLINK socket)",
        }, async () => {
          const probe = `${python} -I -c "import socket
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('netlink:open')
except OSError as e: print('netlink:' + str(e.errno))"; readlink /proc/self/ns/net`;
          const r = await run(mode, probe);
          if (refusesSockets) assert.match(r.output, /netlink:1\n/, "EPERM");
          else assert.ok(!r.output.includes(hostNetNs), "a private network namespace");
          const control = await exec(ex, { command: ["bash", "-c", probe], cwd: ws, env, sandbox: FULL_ACCESS });
          assert.match(
            control.output,
            new RegExp(`^netlink:open\n${hostNetNs.replace(/[[\]]/g, "\\$&")}\n$`),
            "the same probe opens one on the host without a sandbox",
          );
        });

        test("an abstract Unix socket outside the sandbox cannot be reached", {
          skip:
            (support.landlock?.abi ?? 0) < 6 &&
            mechanism.name === "landlock" &&
            "abstract-socket scoping needs Landlock ABI 6 (Linux 6.12)",
        }, async () => {
          const name = `relay-escape-${process.pid}-${mode}-${mechanism.label.length}`;
          // A Node listener: Node binds abstract names (a leading NUL); the test runner may not.
          const server = spawn(
            "node",
            [
              "-e",
              `const s=require('net').createServer(c=>{process.stdout.write('hit\\n');c.end()});s.listen('\\0'+process.argv[1],()=>process.stdout.write('listening\\n'))`,
              name,
            ],
            { stdio: ["ignore", "pipe", "inherit"] },
          );
          // One listener collects the output; each wait only watches it grow.
          let out = "";
          const waiters: Array<() => void> = [];
          server.stdout.on("data", (d: Buffer) => {
            out += d.toString();
            waiters.splice(0).forEach((w) => w());
          });
          const seen = async (text: string) => {
            while (!out.includes(text)) await new Promise<void>((r) => waiters.push(r));
          };
          await seen("listening\n");
          try {
            const probe = `node -e "require('net').connect('\\\\0'+process.argv[1]).on('connect',()=>{console.log('abstract:connected');process.exit()}).on('error',e=>console.log('abstract:'+e.code))" ${name}`;
            const r = await run(mode, probe);
            assert.match(r.output, /abstract:(EPERM|EACCES|ECONNREFUSED)\n/);
            const control = await exec(ex, { command: ["bash", "-c", probe], cwd: ws, env, sandbox: FULL_ACCESS });
            assert.equal(control.output, "abstract:connected\n", "the same probe connects without a sandbox");
            await seen("hit\n");
            assert.equal(out.split("hit\n").length - 1, 1, "only the unsandboxed probe arrived");
          } finally {
            server.kill();
          }
        });

        test("a named Unix socket outside the writable roots cannot be reached; the same one can with the network on", async () => {
          const sock = path.join(out, `named-${mode}.sock`);
          const server = await unixServer(sock);
          try {
            const r = await run(mode, connectProbe(sock));
            assert.match(r.output, /^named:(ECONNREFUSED|EACCES|EPERM)\n$/, "the socket is hidden");
            assert.equal(server.hits(), 0, "no connection arrived");
            const control = await exec(ex, {
              command: ["bash", "-c", connectProbe(sock)],
              cwd: ws,
              env,
              sandbox: FULL_ACCESS,
            });
            assert.equal(control.output, "named:connected\n", "the same probe connects without a sandbox");
            if (mode === "workspace-write") {
              const networked = await exec(ex, {
                command: ["bash", "-c", connectProbe(sock)],
                cwd: ws,
                env,
                sandbox: { ...policy(mode), network: true },
              });
              assert.equal(networked.output, "named:connected\n", "with the network on, sockets are reachable");
            }
          } finally {
            await server.close();
          }
        });

        test("a listed socket whose file was unlinked, then one bound at the same path: the new one is hidden too", async () => {
          // /proc/net/unix keeps listing a listener's path after its file is gone: the path names
          // nothing for the first command, and a socket for the second (kept namespaces must notice).
          const sock = path.join(out, `unlinked-${mode}.sock`);
          const first = await unixServer(sock);
          const second = { server: undefined as Awaited<ReturnType<typeof unixServer>> | undefined };
          try {
            rmSync(sock);
            const r = await run(mode, connectProbe(sock));
            assert.equal(r.output, "named:ENOENT\n");
            second.server = await unixServer(sock);
            const again = await run(mode, connectProbe(sock));
            assert.match(again.output, /^named:(ECONNREFUSED|EACCES|EPERM)\n$/, "the new socket is hidden");
            assert.equal(second.server.hits(), 0, "no connection arrived");
          } finally {
            await first.close();
            await second.server?.close();
          }
        });

        test("signalling the executor (the command's parent) is refused", {
          skip:
            (support.landlock?.abi ?? 0) < 6 &&
            mechanism.name === "landlock" &&
            "signal scoping needs Landlock ABI 6 (Linux 6.12)",
        }, async () => {
          const pid = ex.pid!;
          // The built-in sandbox runs the command in the executor's container, where its parent
          // is the container's init (pid 1), or a helper outside (pid 0), and the executor's pid
          // names nothing; under bubblewrap the parent is bwrap's own init inside the sandbox.
          // Only relay's pid is tried.
          const parent = mechanism.name === "landlock" ? `; echo "ppid:$PPID"` : "";
          const r = await run(mode, `kill -TERM ${pid} 2>/dev/null; echo "kill:$?"${parent}`);
          assert.match(r.output, /kill:1\n/);
          if (parent) assert.match(r.output, new RegExp(`ppid:${parentPid}\n`));
          assert.ok(isAlive(pid), "the executor is alive");
          const again = await run(mode, "echo still-serving");
          assert.equal(again.output, "still-serving\n");
        });

        test("a double-forked, setsid daemon is still confined", async () => {
          // `| cat` ends when the daemon closes its stdout, so the wait is for the event itself.
          const r = await run(
            mode,
            `( setsid bash -c 'echo x > ${out}/daemon.txt 2>/dev/null; echo "daemon:$?"' & ) | cat`,
          );
          assert.match(r.output, /daemon:1\n/);
          absent(path.join(out, "daemon.txt"));
          untouched();
        });
      });
    }

    describe("allowed side", () => {
      test("workspace-write: build and test a small project in the workspace; temp dir and /dev/null work", async () => {
        const proj = path.join(ws, "proj");
        mkdirSync(proj, { recursive: true });
        writeFileSync(
          path.join(proj, "build.js"),
          `require("fs").mkdirSync("dist",{recursive:true});require("fs").writeFileSync("dist/add.js","exports.add=(a,b)=>a+b\\n");`,
        );
        writeFileSync(
          path.join(proj, "add.test.js"),
          `const t=require("node:test");const a=require("node:assert");t.test("adds",()=>a.equal(require("./dist/add.js").add(2,3),5));`,
        );
        const tmp = mkdtempSync(path.join(os.tmpdir(), "relay-escape-tmp-"));
        try {
          const r = await run(
            "workspace-write",
            `cd proj && node build.js && node --test add.test.js >/dev/null && echo tests-passed; echo ok > ${tmp}/t && cat ${tmp}/t; echo gone > /dev/null && echo devnull-ok; mkdir -p newdir/deep && echo n > newdir/deep/f && echo newdir-ok; echo top > ../top-level.txt && echo top-ok`,
          );
          assert.equal(r.exit_code, 0, r.output);
          assert.match(r.output, /tests-passed\nok\ndevnull-ok\nnewdir-ok\ntop-ok\n/);
          assert.equal(readFileSync(path.join(proj, "dist", "add.js"), "utf8"), "exports.add=(a,b)=>a+b\n");
          assert.equal(readFileSync(path.join(ws, "top-level.txt"), "utf8"), "top\n");
        } finally {
          rmSync(tmp, { recursive: true, force: true });
        }
      });

      test("workspace-write: a named Unix socket inside the workspace stays reachable", async () => {
        const server = await unixServer(path.join(ws, "inside.sock"));
        try {
          const r = await run("workspace-write", connectProbe(path.join(ws, "inside.sock")));
          assert.equal(r.output, "named:connected\n");
          assert.equal(server.hits(), 1);
        } finally {
          await server.close();
          rmSync(path.join(ws, "inside.sock"), { force: true });
        }
      });

      test("read-only: reads, pipes and /dev/null work; the temp dir is not writable", async () => {
        const r = await run(
          "read-only",
          `cat file.txt | tr a-z A-Z; echo x > /dev/null && echo devnull-ok; (echo x > /tmp/relay-ro-$$) 2>/dev/null; echo "tmp:$?"`,
        );
        assert.equal(r.output, "WORKSPACE FILE\ndevnull-ok\ntmp:1\n");
      });

      test("the command runs in the executor's container: a pid namespace of its own, shared by every command, with its own /proc", {
        skip: mechanism.name !== "landlock" && "bubblewrap makes one pid namespace per command",
      }, async () => {
        const script = `echo "$$ $(cut -d' ' -f4 /proc/self/stat) $PPID"; readlink /proc/self/ns/pid`;
        const [first, second] = [await run("workspace-write", script), await run("read-only", script)];
        const [ids, ns] = first.output.trim().split("\n");
        const [shellPid, statParent, ppid] = ids!.split(" ").map(Number);
        assert.equal(statParent, shellPid, "$$ and /proc agree: /proc/self/stat's parent of `cut` is the shell");
        assert.equal(
          ppid,
          parentPid,
          mechanism.executorEnv
            ? "the helper that waits for the command is outside the namespace"
            : "the container's init started the command",
        );
        assert.notEqual(ns, readlinkSync("/proc/self/ns/pid"), "not the host's pid namespace");
        assert.equal(second.output.trim().split("\n")[1], ns, "one container for every command of the executor");
      });

      test("signals are the command's defaults: nothing ignored or blocked is inherited from the runtime", async () => {
        // Bun ignores SIGPIPE; inherited, `yes | head -1` would fail with "Broken pipe".
        const r = await run("workspace-write", `yes | head -1; grep -E '^Sig(Ign|Blk):' /proc/self/status`);
        assert.equal(r.exit_code, 0, r.output);
        assert.equal(r.output, "y\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
      });

      test("exit status and environment pass through unchanged", async () => {
        const r = await exec(ex, {
          command: [
            "sh",
            "-c",
            'echo "$RELAY_ESCAPE_VAR:$(pwd):${BUN_JSC_useConcurrentJIT-unset}:${MIMALLOC_PURGE_DELAY-unset}"; exit 7',
          ],
          cwd: ws,
          env: { ...env, RELAY_ESCAPE_VAR: "kept" },
          sandbox: policy("workspace-write"),
        });
        assert.equal(r.exit_code, 7);
        assert.equal(r.output, `kept:${ws}:unset:unset\n`, "the helper's own variables are not left to the command");
      });

      for (const mode of ["workspace-write", "read-only"] as const) {
        test(`${mode}: a PTY session is a terminal and reads stdin`, async () => {
          const started = await run(mode, `test -t 0 && test -t 1 && echo is-a-tty; read -r name; echo "hi:$name"`, {
            tty: true,
            yield_time_ms: 300,
          });
          assert.ok(started.process_id !== undefined, started.output);
          const done = await write(ex, started.process_id!, "relay\n", { yield_time_ms: 10_000 });
          assert.match(started.output + done.output, /is-a-tty[\s\S]*hi:relay/);
          assert.equal(done.exit_code, 0);
        });
      }
    });
  });
}

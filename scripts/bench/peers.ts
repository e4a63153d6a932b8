/**
 * Relay beside the reference CLI (the Codex CLI, `@openai/codex@0.171.0`) on the same fake model
 * server (loopback SSE), whole processes timed in alternating pairs (A B A B …, medians), so a
 * machine that slows down mid-run slows both alike:
 *   bun scripts/bench/peers.ts [--binary dist/relay] [--codex PATH] [--runs 6] [--calls 20]
 * Rows, each `name value goal OK|MISS` (a ratio relay/codex; lower is better):
 *   peers.turn_no_tool      one turn, no tool call            goal ≤ 0.2
 *   peers.turn_one_tool     one `true` call, then the answer  goal ≤ 0.2
 *   peers.tools_N_nosandbox N `true` calls, no sandbox        (context: per-call gap of each)
 *   peers.tools_N_sandbox   N `true` calls, default sandbox   (context: per-call gap of each)
 *   peers.code_mode_host_start_exit / _rss  `relay code-mode-host` beside the reference's
 *                           `codex-code-mode-host` (in the CLI's platform package), each started
 *                           and ended by the end of its input   goal ≤ 2
 *   peers.code_mode_host_first_answer  a fresh `relay code-mode-host` spawned, a session opened
 *                           and `text("ok")` answered, against the reference host's start to
 *                           exit (the issue's measure of a host's start)   goal ≤ 2
 * plus `#` lines with both sides' milliseconds and peak RSS. The Codex CLI is found with
 * --codex, RELAY_TEST_CODEX (CI installs it there) or PATH; without it every row is skipped with
 * the reason.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { CodeModeSession } from "../../src/contracts/code-mode-provider.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";
import { findCodex, writeCodexConfig } from "../../test/support/codex-cli.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "../../test/support/fake-model-server.ts";
import { goalLine, must, numberFlag, percentile, ROOT, textFlag } from "./stats.ts";

const RUNS = numberFlag("--runs", 6);
const CALLS = numberFlag("--calls", 20);
const BINARY = path.resolve(textFlag("--binary") ?? path.join(ROOT, "dist/relay"));

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

interface Side {
  name: "relay" | "codex";
  /** The argv of one `exec`-style run of `prompt` under `sandbox` (none: no sandbox at all). */
  argv(prompt: string, sandbox: "none" | "default"): string[];
  /** The tool a command is run with, as this side's requests list it, and its arguments for `cmd`. */
  shellCall(cmd: string): { name: string; args: Record<string, unknown> };
}

interface Run {
  ms: number;
  maxRssMiB: number;
}

/** Runs `argv` to its end in `cwd` with `env`; wall time and peak RSS (of the main process). */
async function timed(argv: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  const t = performance.now();
  const child = Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const stderr = await new Response(child.stderr).text();
  const code = await child.exited;
  const ms = performance.now() - t;
  if (code !== 0) throw new Error(`${argv[0]} exited ${code}: ${stderr.slice(-2000)}`);
  return { ms, maxRssMiB: (child.resourceUsage()?.maxRSS ?? 0) / 1024 / 1024 };
}

/** The per-call gap of the last run: when a tool's output reached the server minus when its call went out. */
function gaps(server: FakeModelServer, since: number): number[] {
  const reqs = server.requests.slice(since);
  const out: number[] = [];
  for (let i = 1; i < reqs.length; i++) {
    const sent = reqs[i - 1]!.repliedAtMs;
    if (sent !== undefined) out.push(reqs[i]!.receivedAtMs - sent);
  }
  return out;
}

async function main(): Promise<void> {
  if (!existsSync(BINARY)) {
    process.stderr.write(`no relay binary at ${BINARY}: build it (npm run build) or give --binary\n`);
    process.exit(2);
  }
  const codex = findCodex(textFlag("--codex"));
  if ("missing" in codex) {
    for (const row of [
      "turn_no_tool",
      "turn_one_tool",
      `tools_${CALLS}_nosandbox`,
      `tools_${CALLS}_sandbox`,
      "code_mode_host",
    ])
      process.stdout.write(`# skipping peers.${row}: ${codex.missing}\n`);
    return;
  }
  await codeModeHosts(codex.bin);
  const server = await startFakeModelServer();
  const root = mkdtempSync(path.join(os.tmpdir(), "relay-bench-peers-"));
  try {
    await compare(server, root, codex.bin);
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function compare(server: FakeModelServer, root: string, codexBin: string): Promise<void> {
  const relayHome = path.join(root, "relay-home");
  const codexHome = path.join(root, "codex-home");
  const ws = path.join(root, "ws");
  for (const d of [relayHome, codexHome, ws]) mkdirSync(d);
  writeCodexConfig(codexHome, server.baseUrl);
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: root,
    RELAY_HOME: relayHome,
    CODEX_HOME: codexHome,
    FAKE_KEY: "x",
    OPENAI_API_KEY: "x",
    NO_COLOR: "1",
  };
  const relay: Side = {
    name: "relay",
    argv: (prompt, sandbox) => [
      BINARY,
      "run",
      "--base-url",
      server.baseUrl,
      "-m",
      "test-model",
      "--approval",
      "never",
      "-s",
      sandbox === "none" ? "danger-full-access" : "workspace-write",
      prompt,
    ],
    shellCall: (cmd) => ({ name: "exec_command", args: { cmd } }),
  };
  const codexShell = await codexShellTool(server, codexBin, ws, env);
  const codex: Side = {
    name: "codex",
    argv: (prompt, sandbox) => [
      codexBin,
      "exec",
      "--skip-git-repo-check",
      ...(sandbox === "none" ? ["--dangerously-bypass-approvals-and-sandbox"] : ["-s", "workspace-write"]),
      prompt,
    ],
    shellCall: codexShell,
  };
  process.stdout.write(`# relay ${BINARY}; codex ${codexBin}; ${RUNS} alternating pairs each\n`);
  await row("turn_no_tool", 0.2, 0, "none");
  await row("turn_one_tool", 0.2, 1, "none");
  await row(`tools_${CALLS}_nosandbox`, 0.2, CALLS, "none");
  await row(`tools_${CALLS}_sandbox`, 0.2, CALLS, "default");

  async function row(name: string, goal: number, calls: number, sandbox: "none" | "default"): Promise<void> {
    const by: Record<string, { ms: number[]; rss: number[]; gaps: number[] }> = {
      relay: { ms: [], rss: [], gaps: [] },
      codex: { ms: [], rss: [], gaps: [] },
    };
    for (let i = 0; i < RUNS; i++) {
      for (const side of i % 2 === 0 ? [relay, codex] : [codex, relay]) {
        const call = side.shellCall("true");
        for (let c = 0; c < calls; c++) server.enqueue(reply().toolCall(call.name, call.args, { callId: `call_${c}` }));
        server.enqueue(reply().text("done"));
        const since = server.requests.length;
        const r = await timed(side.argv("run true as asked", sandbox), ws, env);
        by[side.name]!.ms.push(r.ms);
        by[side.name]!.rss.push(r.maxRssMiB);
        by[side.name]!.gaps.push(...gaps(server, since));
      }
    }
    const [rm, cm] = [median(by.relay!.ms), median(by.codex!.ms)];
    const gap = (s: string) => (calls > 1 ? `, per-call gap p50 ${median(by[s]!.gaps).toFixed(1)} ms` : "");
    process.stdout.write(
      `# ${name}: relay ${rm.toFixed(0)} ms (RSS ${median(by.relay!.rss).toFixed(0)} MiB${gap("relay")}); codex ${cm.toFixed(0)} ms (RSS ${median(by.codex!.rss).toFixed(0)} MiB${gap("codex")})\n`,
    );
    process.stdout.write(`${goalLine(`peers.${name}`, rm / cm, goal)}\n`);
  }
}

/** The reference's code-mode host, shipped in the CLI's platform package beside it. */
function findReferenceHost(codexBin: string): string | undefined {
  let dir = path.dirname(realpathSync(codexBin));
  while (path.basename(dir) !== "node_modules" && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const openai = path.join(dir, "@openai");
  if (!existsSync(openai)) return undefined;
  for (const pkg of readdirSync(openai).filter((p) => p.startsWith("codex-"))) {
    const vendor = path.join(openai, pkg, "vendor");
    if (!existsSync(vendor)) continue;
    for (const triple of readdirSync(vendor)) {
      const host = path.join(vendor, triple, "bin", "codex-code-mode-host");
      if (existsSync(host)) return host;
    }
  }
  return undefined;
}

/** Both code-mode hosts started, then ended by the end of their input: wall time and peak RSS, in pairs. */
async function codeModeHosts(codexBin: string): Promise<void> {
  const reference = findReferenceHost(codexBin);
  if (!reference) {
    process.stdout.write("# skipping peers.code_mode_host: no codex-code-mode-host beside the Codex CLI\n");
    return;
  }
  const sides = { relay: [BINARY, "code-mode-host"], codex: [reference] };
  const by: Record<string, Run[]> = { relay: [], codex: [] };
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: os.tmpdir() };
  for (let i = 0; i < RUNS * 2; i++)
    for (const name of i % 2 === 0 ? ["relay", "codex"] : ["codex", "relay"])
      by[name]!.push(await timed(sides[name as keyof typeof sides], os.tmpdir(), env));
  const ms = (n: string) => median(by[n]!.map((r) => r.ms));
  const rss = (n: string) => median(by[n]!.map((r) => r.maxRssMiB));
  process.stdout.write(
    `# code-mode host, start to exit on end of input: relay ${ms("relay").toFixed(1)} ms (RSS ${rss("relay").toFixed(1)} MiB); codex ${ms("codex").toFixed(1)} ms (RSS ${rss("codex").toFixed(1)} MiB)\n`,
  );
  process.stdout.write(`${goalLine("peers.code_mode_host_start_exit", ms("relay") / ms("codex"), 2)}\n`);
  process.stdout.write(`${goalLine("peers.code_mode_host_rss", rss("relay") / rss("codex"), 2)}\n`);
  await firstAnswers(sides.codex, env);
}

/** A fresh relay host's spawn to its first `text("ok")` answer, in pairs with the reference host's start to exit. */
async function firstAnswers(reference: string[], env: Record<string, string>): Promise<void> {
  process.env.RELAY_SELF_COMMAND = joinCommandLine([BINARY]);
  const relay: number[] = [];
  const codex: number[] = [];
  for (let i = 0; i < RUNS * 2; i++) {
    if (i % 2 === 1) codex.push((await timed(reference, os.tmpdir(), env)).ms);
    relay.push(await relayFirstAnswer());
    if (i % 2 === 0) codex.push((await timed(reference, os.tmpdir(), env)).ms);
  }
  process.stdout.write(
    `# code-mode host's first answer (spawn, session, text("ok")): relay ${median(relay).toFixed(1)} ms; codex start to exit ${median(codex).toFixed(1)} ms\n`,
  );
  process.stdout.write(`${goalLine("peers.code_mode_host_first_answer", median(relay) / median(codex), 2)}\n`);
}

async function relayFirstAnswer(): Promise<number> {
  const t = performance.now();
  const provider = new HostProvider({ pool: 0 });
  const session: CodeModeSession = await must(provider.openSession({ invokeTool: async () => ok(null) }));
  const answer = await must(session.execute({ tool_call_id: "bench", source: "text('ok')" }));
  const ms = performance.now() - t;
  await provider.close();
  if (!("Result" in answer) || answer.Result.error_text !== null)
    throw new Error(`unexpected: ${JSON.stringify(answer)}`);
  return ms;
}

/**
 * The tool the Codex CLI runs commands with, from the tools its first request lists: a
 * `shell`-style tool takes an argv, an `exec_command`-style one a command line.
 */
async function codexShellTool(
  server: FakeModelServer,
  codexBin: string,
  ws: string,
  env: Record<string, string>,
): Promise<(cmd: string) => { name: string; args: Record<string, unknown> }> {
  server.enqueue(reply().text("ready"));
  const since = server.requests.length;
  await timed([codexBin, "exec", "--skip-git-repo-check", "say ready"], ws, env);
  const tools = ((server.requests[since]?.body.tools ?? []) as Array<{ name?: string }>).map((t) => t.name);
  if (tools.includes("exec_command")) return (cmd) => ({ name: "exec_command", args: { cmd } });
  if (tools.includes("shell")) return (cmd) => ({ name: "shell", args: { command: ["bash", "-lc", cmd] } });
  throw new Error(`the Codex CLI lists no shell tool (it lists: ${tools.join(", ")})`);
}

await main();

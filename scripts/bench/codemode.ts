/**
 * Code mode: in-process engine vs the `code-mode-host` process (IPC), side by side, with a
 * `text('ok')` workload. Rows: session startup (a new host/provider until the session is open),
 * fresh-session command (pre-spawned host + create_session + first command), warm session
 * provisioning (create_session on a running host), warm command (execute in an open session).
 *   bun scripts/bench/codemode.ts [--rounds 200] [--cold 10] [--json]
 * The host is whatever relay re-execs (RELAY_SELF_COMMAND; from source by default): startup.ts
 * runs this with the compiled binary. --json prints one line of p50 figures instead of tables.
 */

import { CodeModeEngine } from "../../src/codemode/engine.ts";
import { InProcessProvider } from "../../src/codemode/in-process-provider.ts";
import { warmUp } from "../../src/codemode/server.ts";
import { CodeModeMethods } from "../../src/contracts/code-mode.ts";
import type { CodeModeCallbacks, CodeModeSession } from "../../src/contracts/code-mode-provider.ts";
import type { RpcPeer } from "../../src/protocol/peer.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";
import { fmtMs, must, numberFlag, printTable, summarize, useSourceRelay } from "./stats.ts";

const ROUNDS = numberFlag("--rounds", 200);
const JSON_OUT = process.argv.includes("--json");
const COLD = numberFlag("--cold", 10);
useSourceRelay();

const callbacks: CodeModeCallbacks = { invokeTool: async () => ok(null) };
const WORK = { tool_call_id: "bench", source: "text('ok')" };

async function command(s: CodeModeSession): Promise<void> {
  const r = await must(s.execute(WORK));
  if (!("Result" in r) || r.Result.error_text !== null) throw new Error(`unexpected: ${JSON.stringify(r)}`);
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

interface Figures {
  startup: number[];
  fresh: number[];
  provision: number[];
  /** After a short idle gap, like exec calls between model turns. */
  warm: number[];
  /** Back to back, in blocks per side. */
  burst: number[];
}

type Kind = "in-process" | "ipc";
const make = (kind: Kind, pool = 0): HostProvider | InProcessProvider =>
  kind === "ipc" ? new HostProvider({ pool }) : new InProcessProvider();

async function cold(kind: Kind, f: Figures): Promise<void> {
  // Session startup: a brand-new provider (IPC: spawn a host, no pool) until the session is open.
  for (let i = 0; i < COLD; i++) {
    const p = make(kind);
    f.startup.push(await timed(async () => void (await must(p.openSession(callbacks)))));
    await p.close();
  }
  // Fresh-session command: a fresh host taken from a pre-spawned pool + session + first command.
  const pooled = make(kind, 1);
  if (pooled instanceof HostProvider) await pooled.prewarm();
  for (let i = 0; i < COLD * 3; i++) {
    f.fresh.push(await timed(async () => command(await must(pooled.openSession(callbacks)))));
    if (pooled instanceof HostProvider) {
      await pooled.retire();
      await pooled.prewarm();
    }
  }
  await pooled.close();
}

const inProc: Figures = { startup: [], fresh: [], provision: [], warm: [], burst: [] };
const ipc: Figures = { startup: [], fresh: [], provision: [], warm: [], burst: [] };
await cold("in-process", inProc);
await cold("ipc", ipc);

// Warm figures: both sides warmed the same way, then measured interleaved so that noise from
// other processes on the machine hits both columns alike.
const engine = await CodeModeEngine.load();
await warmUp(engine);
const a = make("in-process");
const b = make("ipc");
if (b instanceof HostProvider) await must(b.ensureWarm());
// The transport floor: a bare request/response to the same host, measured both ways too.
const floor: number[] = [];
const burstFloor: number[] = [];
const hostPeer = (b as unknown as { current: { child: { peer: RpcPeer } } }).current.child.peer;
const sa = await must(a.openSession(callbacks));
const sb = await must(b.openSession(callbacks));
for (let i = 0; i < 50; i++) {
  await command(sa);
  await command(sb);
}
// Every timed step starts once both sides have finished the VM housekeeping of the last one,
// then after a short idle gap, as exec calls do between model turns. That work is deferred until
// a side has been quiet for a millisecond and then done one job per timer tick; the in-process
// engine shares this process, so without the wait its housekeeping would land in the IPC
// measurement (and the host's in the floor's).
const settled = async () => {
  for (let i = 0; i < 500 && !((await a.vmsSettled()) && (await b.vmsSettled())); i++)
    await new Promise((r) => setTimeout(r, 1));
};
const gap = async () => {
  await settled();
  await new Promise((r) => setTimeout(r, 2));
};
for (let i = 0; i < ROUNDS; i++) {
  for (const [p, f] of [
    [a, inProc],
    [b, ipc],
  ] as const) {
    let s: CodeModeSession | undefined;
    await gap();
    f.provision.push(await timed(async () => void (s = await must(p.openSession(callbacks)))));
    await s!.shutdown();
  }
  await gap();
  inProc.warm.push(await timed(() => command(sa)));
  await gap();
  ipc.warm.push(await timed(() => command(sb)));
  await gap();
  floor.push(await timed(async () => void (await must(hostPeer.call(CodeModeMethods.hello, {})))));
}
// Back to back: bursts of commands per side, each burst starting once both sides are settled.
for (let i = 0; i < ROUNDS / 10; i++) {
  await settled();
  for (let j = 0; j < 10; j++) inProc.burst.push(await timed(() => command(sa)));
  await settled();
  for (let j = 0; j < 10; j++) ipc.burst.push(await timed(() => command(sb)));
  await settled();
  for (let j = 0; j < 10; j++)
    burstFloor.push(await timed(async () => void (await must(hostPeer.call(CodeModeMethods.hello, {})))));
}
await a.close();
await b.close();

const rows: string[][] = [
  ["metric", "in-process mean", "p50", "p95", "IPC mean", "p50", "p95", "IPC - in-process (p50)"],
];
const labels: Array<[keyof Figures, string]> = [
  ["startup", "session startup"],
  ["fresh", "fresh-session command"],
  ["provision", "warm session provisioning"],
  ["warm", "warm command (after 2 ms idle)"],
  ["burst", "warm command (back to back)"],
];
for (const [k, label] of labels) {
  const a = summarize(inProc[k]);
  const b = summarize(ipc[k]);
  rows.push([
    label,
    fmtMs(a.mean),
    fmtMs(a.p50),
    fmtMs(a.p95),
    fmtMs(b.mean),
    fmtMs(b.p50),
    fmtMs(b.p95),
    fmtMs(b.p50 - a.p50),
  ]);
}
const f = summarize(floor);
const bf = summarize(burstFloor);
if (JSON_OUT) {
  const p50 = (fig: Figures) => Object.fromEntries(labels.map(([k]) => [k, summarize(fig[k]).p50]));
  process.stdout.write(
    `${JSON.stringify({ inProcess: p50(inProc), ipc: p50(ipc), roundTrip: { warm: f.p50, burst: bf.p50 } })}\n`,
  );
  process.exit(0);
}
process.stdout.write(
  `code mode, text('ok'): ${ROUNDS} warm rounds, ${COLD} cold starts, runtime ${process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.versions.node}`}\n`,
);
printTable(rows);
process.stdout.write(
  `\nbare IPC round trip to the same host (codemode/hello): after the same gap p50 ${fmtMs(f.p50)} (mean ${fmtMs(f.mean)}), back to back p50 ${fmtMs(bf.p50)} (mean ${fmtMs(bf.mean)})\n`,
);
for (const [k, what, rtt] of [
  ["warm", "after idle", f.p50],
  ["burst", "back to back", bf.p50],
] as const) {
  const overhead = summarize(ipc[k]).p50 - summarize(inProc[k]).p50;
  // The part above a bare round trip is what relay's code adds; the round trip is the machine's.
  process.stdout.write(
    `warm-command IPC overhead p50 (${what}): ${fmtMs(overhead)} (target <= 0.25 ms) ${overhead <= 0.25 ? "OK" : "MISSED"}; above the bare round trip: ${fmtMs(overhead - rtt)}\n`,
  );
}
const fresh = summarize(ipc.fresh).p50;
process.stdout.write(
  `fresh host (pre-spawned pool) + first command p50: ${fmtMs(fresh)} (target <= 7 ms) ${fresh <= 7 ? "OK" : "MISSED"}\n`,
);
process.exit(0);

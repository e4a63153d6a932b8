/**
 * Frame round trips between two processes (relay re-execing itself as `rpc-echo`) against an
 * in-process baseline measured in the same run, so the ratio holds on a noisy machine.
 *   bun scripts/bench/frames.ts [--rounds 1000] [--mib 8]
 */
import { PassThrough } from "node:stream";
import { EchoMethod } from "../../src/cli/rpc-echo.ts";
import { spawnSelf } from "../../src/protocol/child.ts";
import { RpcPeer } from "../../src/protocol/peer.ts";
import { ok } from "../../src/util/result.ts";
import { fmtMs, numberFlag, printTable, summarize, useSourceRelay } from "./stats.ts";

const ROUNDS = numberFlag("--rounds", 1000);
const MIB = numberFlag("--mib", 8);
useSourceRelay();

function inProcessPeer(): RpcPeer {
  const a = new PassThrough({ highWaterMark: 1 << 20 });
  const b = new PassThrough({ highWaterMark: 1 << 20 });
  const server = new RpcPeer(a, b, { name: "in-process", frameLimit: 64 << 20 });
  server.handle(EchoMethod, (p) => ok(p));
  return new RpcPeer(b, a, { name: "client", frameLimit: 64 << 20 });
}

async function roundTrips(peer: RpcPeer): Promise<number[]> {
  for (let i = 0; i < 50; i++) await peer.call(EchoMethod, { i }); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const r = await peer.call(EchoMethod, { i, text: "small frame" });
    samples.push(performance.now() - t);
    if ("error" in r) throw new Error(r.error.message);
  }
  return samples;
}

async function bigFrame(peer: RpcPeer): Promise<number> {
  const payload = "x".repeat(MIB * 1024 * 1024 - 64);
  const best: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const r = await peer.call(EchoMethod, payload);
    best.push(performance.now() - t);
    if ("error" in r) throw new Error(r.error.message);
  }
  return Math.min(...best);
}

const base = inProcessPeer();
const child = spawnSelf("rpc-echo", ["--frame-limit", String(64 << 20)], { frameLimit: 64 << 20 });
if ("error" in child) throw new Error(child.error.message);
const ipc = child.ok.peer;

const baseRt = summarize(await roundTrips(base));
const ipcRt = summarize(await roundTrips(ipc));
const baseBig = await bigFrame(base);
const ipcBig = await bigFrame(ipc);
await child.ok.shutdown();

const mibps = (ms: number) => `${((2 * MIB) / (ms / 1000)).toFixed(0)} MiB/s`;
process.stdout.write(
  `frames: ${ROUNDS} sequential round trips and a ${MIB} MiB echo (best of 3), runtime ${process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.version}`}\n\n`,
);
printTable([
  ["measure", "in-process (baseline)", "two processes", "ratio"],
  ["round trip p50", fmtMs(baseRt.p50), fmtMs(ipcRt.p50), `${(ipcRt.p50 / baseRt.p50).toFixed(1)}x`],
  ["round trip p95", fmtMs(baseRt.p95), fmtMs(ipcRt.p95), `${(ipcRt.p95 / baseRt.p95).toFixed(1)}x`],
  [
    `${MIB} MiB echo`,
    `${fmtMs(baseBig)} (${mibps(baseBig)})`,
    `${fmtMs(ipcBig)} (${mibps(ipcBig)})`,
    `${(ipcBig / baseBig).toFixed(1)}x`,
  ],
]);

/**
 * How soon `relay run` gets its first request to a model server that is far away: the fake
 * model server behind TLS and a relay that holds every chunk for half a round trip each way, so
 * a TLS handshake costs a round trip, as it does to a distant API. Alternated with an older
 * build (A B A B …, medians):
 *   bun scripts/bench/first-request.ts --before OLD_BINARY [--binary dist/relay] [--rtt 40] [--runs 8]
 * Prints, for each build, the time from spawn to the server's receipt of the first request and
 * the whole turn, and `first_request.rtt<N>.ratio value goal OK|MISS`: this build's time to the
 * first request over the older one's (goal ≤ 0.95: the connection made while the session starts
 * must show). Needs `openssl` for a throwaway certificate (skipped with the reason without it).
 * The session runs danger-full-access so that no sandbox container is part of either figure.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { type FakeModelServer, reply, startFakeModelServer } from "../../test/support/fake-model-server.ts";
import { goalLine, numberFlag, ROOT, summarize, textFlag } from "./stats.ts";

const RTT_MS = numberFlag("--rtt", 40);
const RUNS = numberFlag("--runs", 8);
const BINARY = path.resolve(textFlag("--binary") ?? path.join(ROOT, "dist/relay"));
const BEFORE = textFlag("--before");
const work = mkdtempSync(path.join(os.tmpdir(), "relay-first-request-"));

const median = (xs: number[]) => summarize(xs).p50;

/** A throwaway self-signed certificate for 127.0.0.1, or why there is none. */
function certificate(): { cert: string; key: string; file: string } | string {
  const key = path.join(work, "key.pem");
  const file = path.join(work, "cert.pem");
  const r = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", file, "-days", "1"].concat([
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]),
    { stdio: "ignore" },
  );
  if (r.error || r.status !== 0)
    return `openssl could not make a certificate (${r.error?.message ?? `exit ${r.status}`})`;
  return { cert: readFileSync(file, "utf8"), key: readFileSync(key, "utf8"), file };
}

/** Forwards `from` to `to`, each chunk half a round trip later (order kept: the delay is constant). */
function delayed(from: net.Socket, to: net.Socket): void {
  from.on("data", (chunk: Buffer) => setTimeout(() => to.write(chunk), RTT_MS / 2));
  from.on("end", () => setTimeout(() => to.end(), RTT_MS / 2));
  from.on("error", () => to.destroy());
}

/** TLS in front of the fake server, and the distance in front of TLS; the URL clients use. */
async function farServer(server: FakeModelServer, pem: { cert: string; key: string }): Promise<string> {
  const front = tls.createServer({ cert: pem.cert, key: pem.key }, (clear) => {
    const plain = net.connect(server.port, "127.0.0.1");
    clear.pipe(plain).pipe(clear);
    for (const s of [clear, plain]) s.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const far = net.createServer((client) => {
    const near = net.connect((front.address() as net.AddressInfo).port, "127.0.0.1");
    delayed(client, near);
    delayed(near, client);
  });
  await new Promise<void>((resolve) => far.listen(0, "127.0.0.1", resolve));
  return `https://127.0.0.1:${(far.address() as net.AddressInfo).port}/v1`;
}

interface Run {
  firstMs: number;
  wallMs: number;
}

async function oneRun(binary: string, server: FakeModelServer, url: string, caFile: string): Promise<Run> {
  const ws = mkdtempSync(path.join(work, "ws-"));
  const env = { ...process.env, RELAY_HOME: mkdtempSync(path.join(work, "home-")), OPENAI_API_KEY: "bench" };
  const seen = server.requests.length;
  server.enqueue(reply().text("done"));
  const started = performance.now();
  const child = Bun.spawn(
    [binary, "run", "--base-url", url, "-m", "bench", "-s", "danger-full-access", "-C", ws, "hi"],
    { env: { ...env, NODE_EXTRA_CA_CERTS: caFile }, stdin: "ignore", stdout: "ignore", stderr: "pipe" },
  );
  const code = await child.exited;
  const wallMs = performance.now() - started;
  if (code !== 0)
    throw new Error(`relay run exited ${code}: ${(await new Response(child.stderr).text()).slice(-1500)}`);
  const first = server.requests[seen];
  if (!first) throw new Error("the server saw no request");
  return { firstMs: first.receivedAtMs - started, wallMs };
}

async function main(): Promise<void> {
  if (!BEFORE) throw new Error("--before OLD_BINARY is required: the figure is what this build saves against it");
  const pem = certificate();
  if (typeof pem === "string") {
    console.log(`# skipped: ${pem}`);
    return;
  }
  const server = await startFakeModelServer();
  const url = await farServer(server, pem);
  const builds = { now: BINARY, before: path.resolve(BEFORE) };
  const runs: Record<keyof typeof builds, Run[]> = { now: [], before: [] };
  for (let i = 0; i <= RUNS; i++)
    for (const [name, binary] of Object.entries(builds) as Array<[keyof typeof builds, string]>) {
      const r = await oneRun(binary, server, url, pem.file);
      if (i > 0) runs[name].push(r); // the first pair warms the page cache
    }
  for (const [name, rs] of Object.entries(runs))
    console.log(
      `# ${name}: first request at ${median(rs.map((r) => r.firstMs)).toFixed(1)} ms, whole turn ${median(rs.map((r) => r.wallMs)).toFixed(1)} ms (TLS, ${RTT_MS} ms round trip; medians of ${RUNS})`,
    );
  const now = median(runs.now.map((r) => r.firstMs));
  const before = median(runs.before.map((r) => r.firstMs));
  console.log(goalLine(`first_request.rtt${RTT_MS}.ratio`, now / before, 0.95));
  console.log(`# the first request ${(before - now).toFixed(1)} ms sooner`);
  await server.close();
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exit(0);

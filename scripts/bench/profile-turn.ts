/**
 * CPU profiles of every relay process in one `relay run` turn of `true` tool calls against the
 * fake model server, for finding where a tool call's gap goes (docs/performance.md):
 *   bun scripts/bench/profile-turn.ts [--calls 40] [--sandbox workspace-write] [--binary dist/relay] [--out DIR]
 * Each compiled relay process writes a .cpuprofile (BUN_OPTIONS is inherited); this prints the
 * gap p50 and, per profile, the functions most often on top of the stack when sampled (every
 * 250 µs; Chrome DevTools opens the files for the rest). Profiling slows every process: compare
 * profiles, not times.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { reply, startFakeModelServer } from "../../test/support/fake-model-server.ts";
import { numberFlag, percentile, ROOT, textFlag } from "./stats.ts";

const CALLS = numberFlag("--calls", 40);
const SANDBOX = textFlag("--sandbox") ?? "workspace-write";
const BINARY = path.resolve(textFlag("--binary") ?? path.join(ROOT, "dist/relay"));
const OUT = path.resolve(textFlag("--out") ?? path.join(os.tmpdir(), "relay-profiles"));
const TOP = 12;
const INTERVAL_US = 250;

interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
}

/**
 * Samples per function (its own, not its callees'), most first. Sample counts, not the time
 * deltas: a delta also holds the time the process sat idle before that sample.
 */
function selfSamples(file: string): Array<[string, number]> {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const counts = new Map<string, number>();
  p.samples.forEach((id) => {
    const f = byId.get(id)!;
    const name = `${f.functionName || "(anonymous)"} ${path.basename(f.url) || "(native)"}:${f.lineNumber + 1}`;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  });
  return [...counts].filter(([name]) => !/^\((root|idle|program)\)/.test(name)).sort((a, b) => b[1] - a[1]);
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const server = await startFakeModelServer();
try {
  for (let i = 0; i < CALLS; i++)
    server.enqueue(reply().toolCall("exec_command", { cmd: "true" }).usage({ input: 100, output: 10 }));
  server.enqueue(reply().text("done").usage({ input: 100, output: 5 }));
  const work = mkdtempSync(path.join(os.tmpdir(), "relay-profile-turn-"));
  const env = {
    ...process.env,
    RELAY_HOME: path.join(work, "home"),
    OPENAI_API_KEY: "bench",
    BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${OUT} --cpu-prof-interval=${INTERVAL_US}`,
  };
  const argv = [
    BINARY,
    "run",
    "--json",
    "--base-url",
    server.baseUrl,
    "-m",
    "bench",
    "-s",
    SANDBOX,
    "-C",
    work,
    "run true as asked",
  ];
  const child = Bun.spawn(argv, { env, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const code = await child.exited;
  if (code !== 0)
    throw new Error(`relay run exited ${code}: ${(await new Response(child.stderr).text()).slice(-2000)}`);
  const reqs = server.requests;
  const gaps = reqs
    .slice(1)
    .map((r, i) => r.receivedAtMs - reqs[i]!.repliedAtMs!)
    .sort((a, b) => a - b);
  process.stdout.write(
    `${CALLS} calls, sandbox ${SANDBOX}: gap p50 ${percentile(gaps, 50).toFixed(2)} ms (profiled)\n`,
  );
  rmSync(work, { recursive: true, force: true });
} finally {
  await server.close();
}
for (const f of readdirSync(OUT).filter((f) => f.endsWith(".cpuprofile"))) {
  process.stdout.write(`\n${path.join(OUT, f)}\n`);
  for (const [name, n] of selfSamples(path.join(OUT, f)).slice(0, TOP))
    process.stdout.write(`  ${String(n).padStart(6)} samples  ${name}\n`);
}

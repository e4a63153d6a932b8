/**
 * Whole-process measurements for the benchmarks (Bun only: they use Bun.spawn's resource usage):
 * time until a child answers its first frame, its CPU, and the memory of a whole process tree.
 */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessRun {
  /** Spawn until the answer (or, with no request, until exit). */
  wallMs: number;
  /** User + system CPU of the child over its whole life. */
  cpuMs: number;
  /** Peak resident set (Bun reports bytes). */
  maxRssMiB: number;
  exitCode: number | null;
}

/** A frame: 4-byte big-endian length, then UTF-8 JSON. */
export function frame(value: unknown): Uint8Array {
  const body = Buffer.from(JSON.stringify(value));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/** Reads `stream` until one whole frame has arrived; returns its JSON. */
async function readFrame(stream: ReadableStream<Uint8Array>): Promise<unknown> {
  const reader = stream.getReader();
  let buf = Buffer.alloc(0);
  try {
    for (;;) {
      if (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0))
        return JSON.parse(buf.subarray(4, 4 + buf.readUInt32BE(0)).toString("utf8"));
      const { value, done } = await reader.read();
      if (done) throw new Error(`the child closed stdout after ${buf.length} bytes, before a whole frame`);
      buf = Buffer.concat([buf, value]);
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Runs `argv`; with `request`, sends it as a frame, times the first frame back, then closes
 * stdin so the child exits. Throws when the child fails, so no figure is made from a broken run.
 */
export async function timeProcess(
  argv: string[],
  env: Record<string, string | undefined>,
  request?: unknown,
): Promise<ProcessRun> {
  const started = performance.now();
  const child = Bun.spawn(argv, { env, stdin: request ? "pipe" : "ignore", stdout: "pipe", stderr: "pipe" });
  let wallMs: number;
  if (request !== undefined) {
    const stdin = child.stdin as import("bun").FileSink;
    stdin.write(frame(request));
    await stdin.flush();
    const answer = await readFrame(child.stdout);
    wallMs = performance.now() - started;
    if (!answer || typeof answer !== "object" || !("result" in answer))
      throw new Error(`${argv.join(" ")}: unexpected answer ${JSON.stringify(answer)}`);
    await stdin.end();
    await child.exited;
  } else {
    await child.exited;
    wallMs = performance.now() - started;
    await new Response(child.stdout).text();
  }
  const usage = child.resourceUsage();
  if (!usage) throw new Error(`${argv.join(" ")}: no resource usage`);
  if (child.exitCode !== 0)
    throw new Error(
      `${argv.join(" ")} exited ${child.exitCode}: ${(await new Response(child.stderr).text()).slice(-2000)}`,
    );
  return {
    wallMs,
    cpuMs: Number(usage.cpuTime.user + usage.cpuTime.system) / 1000,
    maxRssMiB: Number(usage.maxRSS) / 1048576,
    exitCode: child.exitCode,
  };
}

/** Children of every process, from /proc (Linux). */
function childrenByParent(): Map<number, number[]> {
  const map = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      map.set(ppid, [...(map.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  return map;
}

/** `root` and all its descendants now. */
export function processTree(root: number): number[] {
  const kids = childrenByParent();
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(kids.get(pid) ?? []));
  }
  return out;
}

/** Proportional (shared pages split among their users) and resident set sizes of `pid`, in KiB. */
function memoryOf(pid: number): { pss: number; rss: number } {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
    return { pss: field("Pss"), rss: field("Rss") };
  } catch {
    return { pss: 0, rss: 0 };
  }
}

/**
 * Samples the tree under `root` until `until` settles: the peak of the summed PSS (the tree's
 * real footprint: the binary's pages shared by its processes count once) and of the summed RSS.
 * Sampling perturbs timing, so timed runs do not use it.
 */
export async function peakTreeMemory(
  root: number,
  until: Promise<unknown>,
): Promise<{ pssMiB: number; rssMiB: number; processes: number }> {
  let done = false;
  void until.finally(() => (done = true));
  const peak = { pss: 0, rss: 0, processes: 0 };
  while (!done) {
    const tree = processTree(root);
    const sum = tree.map(memoryOf).reduce((a, b) => ({ pss: a.pss + b.pss, rss: a.rss + b.rss }), { pss: 0, rss: 0 });
    peak.pss = Math.max(peak.pss, sum.pss);
    peak.rss = Math.max(peak.rss, sum.rss);
    peak.processes = Math.max(peak.processes, tree.length);
    await new Promise((r) => setTimeout(r, 5));
  }
  await until;
  return { pssMiB: peak.pss / 1024, rssMiB: peak.rss / 1024, processes: peak.processes };
}

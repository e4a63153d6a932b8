/**
 * The checks of a code-mode `execute`'s two messages (its params and its answer), zod's generic
 * parse against fastParse (the generated validators), each timed alone after an idle gap, as a
 * relay process meets them between tool calls (docs/performance.md, "Compiled checks").
 *   bun scripts/bench/parse.ts [--rounds 400] [--idle 2]
 * Samples alternate between the two ways so drift hits both alike. Goal: fastParse's p50 after
 * the idle is at most half of zod's on each message.
 */
import { CodeModeMethods } from "../../src/contracts/code-mode.ts";
import { fastParse } from "../../src/util/fast-parse.ts";
import { fmtMs, goalLine, numberFlag, printTable, summarize } from "./stats.ts";

const ROUNDS = numberFlag("--rounds", 400);
const IDLE_MS = numberFlag("--idle", 2);

/** What a session sends: a script, the tools it may call, a yield time. */
const PARAMS = {
  session_id: 3,
  request: {
    tool_call_id: "call_8sd7f6g5h4j3k2l1",
    enabled_tools: [
      { name: "exec_command", description: "Runs a command in a shell.", kind: "function" },
      { name: "write_stdin", description: "Writes to a running session.", kind: "function" },
      { name: "apply_patch", description: "Edits files.", kind: "freeform" },
    ],
    source: "const r = await tools.exec_command({ cmd: 'ls -la' });\ntext(r.output);",
    yield_time_ms: 10_000,
  },
};

/** What the host answers when the script ended before the answer left: its result folded in. */
const ANSWER = {
  cell_id: "12",
  execute_id: 41,
  initial: {
    Result: {
      cell_id: "12",
      content_items: [{ type: "input_text", text: "total 48\ndrwxr-xr-x  9 relay relay 4096 Dec  4 10:00 .\n" }],
      error_text: null,
    },
  },
  closed: true,
};

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function timeOne(parse: () => { success: boolean }): number {
  const t = performance.now();
  const r = parse();
  const ms = performance.now() - t;
  if (!r.success) throw new Error("the sample message was refused");
  return ms;
}

type Way = "zod" | "fastParse";
const messages = [
  ["codemode/execute params", CodeModeMethods.execute.params, PARAMS],
  ["codemode/execute answer", CodeModeMethods.execute.result, ANSWER],
] as const;

const idle = new Map<string, number[]>();
const warm = new Map<string, number[]>();
const key = (message: string, way: Way) => `${message}\t${way}`;
for (const [message, schema, value] of messages) {
  const ways: Array<[Way, () => { success: boolean }]> = [
    ["zod", () => schema.safeParse(value)],
    ["fastParse", () => fastParse(schema, value)],
  ];
  for (let i = 0; i < 20; i++) for (const [, parse] of ways) parse(); // first uses out of the way
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? ways : [...ways].reverse();
    for (const [way, parse] of order) {
      await pause(IDLE_MS);
      const list = idle.get(key(message, way)) ?? [];
      list.push(timeOne(parse));
      idle.set(key(message, way), list);
    }
  }
  for (const [way, parse] of ways) {
    for (let i = 0; i < 200; i++) parse();
    warm.set(
      key(message, way),
      Array.from({ length: ROUNDS }, () => timeOne(parse)),
    );
  }
}

process.stdout.write(
  `parse: ${ROUNDS} samples each after ${IDLE_MS} ms idle, runtime ${process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.version}`}\n\n`,
);
const rows = [["message", "way", `p50 after ${IDLE_MS} ms idle`, "p95 after idle", "p50 back to back"]];
for (const [message] of messages)
  for (const way of ["zod", "fastParse"] as const) {
    const a = summarize(idle.get(key(message, way))!);
    const b = summarize(warm.get(key(message, way))!);
    rows.push([message, way, fmtMs(a.p50), fmtMs(a.p95), fmtMs(b.p50)]);
  }
printTable(rows);
process.stdout.write("\n");
for (const [message] of messages) {
  const ratio = summarize(idle.get(key(message, "fastParse"))!).p50 / summarize(idle.get(key(message, "zod"))!).p50;
  process.stdout.write(`${goalLine(`${message.replaceAll(" ", "_")}_fastParse/zod_after_idle`, ratio, 0.5)}\n`);
}

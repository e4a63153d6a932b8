/** `relay sessions list | show`: the saved sessions under $RELAY_HOME/sessions, for people and scripts. */
import { Command, Option } from "@commander-js/extra-typings";
import { relayHome, sessionsDir } from "../home/home.ts";
import { findRollout } from "../rollout/find.ts";
import { listSessions, ownSessions, type SessionList, type SessionSummary } from "../rollout/summary.ts";
import { readTranscript, type SessionTranscript, type TranscriptEntry } from "../rollout/transcript.ts";
import { LIST_HINT } from "../session/source.ts";
import { wholeNumber } from "./number-flag.ts";
import { alignRows, localMinute, outputWidth, sessionCells, shortPath } from "./session-format.ts";
import { ExitCode, fail, warn } from "./usage.ts";

export const DEFAULT_LIST_LIMIT = 20;

function listCommand() {
  return new Command("list")
    .description(
      "the saved sessions, newest first: id, start time, turns, model, cwd and first prompt (infty runs' role sessions are left out: --all or --source infty)",
    )
    .addOption(
      new Option("--limit <n>", `sessions shown (default ${DEFAULT_LIST_LIMIT})`)
        .argParser(wholeNumber("--limit"))
        .conflicts("all"),
    )
    .option("--all", "show every session, infty runs' role sessions too (marked with their run and role)")
    .option("--source <name>", "only sessions of this source: cli, exec, infty (a run's roles), or another program's")
    .option("--json", "print one JSON object: { sessions, total, more, hidden }")
    .action(async (opts) => {
      const home = relayHome();
      const filter =
        opts.source !== undefined
          ? (s: SessionSummary) => s.source === opts.source
          : opts.all
            ? undefined
            : ownSessions;
      const list = await listSessions(home, {
        limit: opts.all ? undefined : (opts.limit ?? DEFAULT_LIST_LIMIT),
        filter,
      });
      if (opts.json) process.stdout.write(JSON.stringify(list) + "\n");
      else process.stdout.write(listText(list, sessionsDir(home), outputWidth(process.stdout), opts.source));
    });
}

function listRow(s: SessionSummary): { cells: string[]; text: string } {
  const r = sessionCells(s);
  return { cells: [s.id, ...r.cells], text: r.text };
}

function listText(list: SessionList, dir: string, width: number, source: string | undefined): string {
  if (list.total === 0) return `no sessions yet (relay run saves them under ${dir})\n`;
  const hidden =
    list.hidden > 0 && source === undefined
      ? `(${list.hidden} session${list.hidden === 1 ? "" : "s"} of infty runs' roles left out: --all or --source infty; continue a run with relay infty resume <run-id>)\n`
      : "";
  if (list.sessions.length === 0)
    return `${source !== undefined ? `no sessions of source ${source}` : "no sessions of your own yet"} among the ${list.total} in ${dir}\n${hidden}`;
  const rows = alignRows(list.sessions.map(listRow), width, {
    cells: ["SESSION", "STARTED", "TURNS", "MODEL", "CWD"],
    text: "PROMPT",
  });
  const more = list.more > 0 ? `… ${list.more} more (--limit N or --all to see them)\n` : "";
  return rows.join("\n") + "\n" + more + hidden;
}

function showCommand() {
  return new Command("show")
    .description(
      "one session: its meta and its conversation (prompts, answers, tool calls with the start of their output)",
    )
    .argument("<session>", "last, a session id, a unique id prefix (8 characters or more), or a rollout path")
    .option("--all", "every entry (texts are still cut); by default a long conversation keeps its start and its end")
    .option("--json", "print one JSON object: { path, meta, entries, omitted, omitted_at, warnings }")
    .action(async (id, opts) => {
      const home = relayHome();
      const found = await findRollout(home, id, { listHint: LIST_HINT });
      if ("error" in found) fail(found.error.message, ExitCode.Usage);
      const t = await readTranscript(found.ok.path, { maxEntries: opts.all ? Infinity : undefined });
      if ("error" in t) fail(t.error.message, ExitCode.Failure);
      if (opts.json) process.stdout.write(JSON.stringify(t.ok) + "\n");
      else process.stdout.write(transcriptText(t.ok));
      warn(t.ok.warnings);
    });
}

function transcriptText(t: SessionTranscript): string {
  const m = t.meta;
  const head = [
    `session  ${m.id}`,
    `started  ${localMinute(new Date(m.started_at))} · ${shortPath(m.cwd, 80)} · ${m.originator} ${m.cli_version}${m.model_provider ? ` · ${m.model_provider}` : ""}`,
    `file     ${t.path}`,
    ...(m.forked_from_id
      ? [`fork of  ${m.forked_from_id}${m.forked_from_path ? ` (${m.forked_from_path})` : ""}`]
      : []),
  ];
  const body: string[] = [];
  let turn = 0;
  t.entries.forEach((e, i) => {
    if (t.omitted > 0 && i === t.omitted_at)
      body.push("", `… ${t.omitted} entries left out (relay sessions show ${m.id} --all) …`);
    if (e.kind === "turn") turn++;
    body.push(...entryText(e, turn));
  });
  return [...head, ...body].join("\n") + "\n";
}

const indent = (text: string, by: string) =>
  text
    .split("\n")
    .map((l) => by + l)
    .join("\n");

function entryText(e: TranscriptEntry, turn: number): string[] {
  switch (e.kind) {
    case "turn":
      return ["", `── turn ${turn} · ${e.model} · ${localMinute(new Date(e.at))} ──`];
    case "user":
      return [`user: ${indent(e.text, "  ").trimStart()}`];
    case "assistant":
      return [`assistant: ${indent(e.text, "  ").trimStart()}`];
    case "reasoning":
      return [`(reasoning) ${e.text}`];
    case "context":
      return [`(context) ${e.text}`];
    case "compacted":
      return ["── history compacted ──", indent(e.text, "  ")];
    case "tool":
      return [
        `→ ${e.name}: ${indent(e.input, "    ").trimStart()}`,
        indent(e.output ?? "(no output recorded)", "  │ "),
      ];
  }
}

export function sessionsCommand() {
  return new Command("sessions")
    .description("list and show saved sessions (the rollouts under $RELAY_HOME/sessions)")
    .addCommand(listCommand())
    .addCommand(showCommand())
    .addHelpText(
      "after",
      `
Resume one with relay run --resume <id> "next request", or branch off with relay run --fork <id>.

Examples:
  relay sessions list
  relay sessions list --source infty     (the sessions of infty runs' roles)
  relay sessions list --json --all
  relay sessions show last
  relay sessions show 0199cccc-44`,
    );
}

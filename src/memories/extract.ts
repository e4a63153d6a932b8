/** Phase 1 extractors: a model with a strict JSON reply, or an offline heuristic. */
import path from "node:path";
import { z } from "zod";
import type { ModelClient } from "../model/client.ts";
import { type MessageItem, messageText, type ResponseItem, userMessage } from "../model/items.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { redactDeep, redactSecrets, safeSlug, withoutMarkers } from "../util/redact.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { truncateMiddle } from "./filter.ts";
import { STAGE1_SYSTEM, stage1Input } from "./prompts.ts";
import type { Stage1Result } from "./store/stage1.ts";

export const Stage1OutputSchema = lazySchema(() =>
  z.strictObject({
    rollout_summary: z.string(),
    rollout_slug: z.string().nullable(),
    raw_memory: z.string(),
  }),
);

export interface ExtractInput {
  threadId: string;
  rolloutPath: string;
  cwd: string;
  gitBranch: string | null;
  items: ResponseItem[];
}

export type Extractor = (input: ExtractInput, signal?: AbortSignal) => Promise<Result<Stage1Result>>;

/** Redacts the three fields (the slug also loses random-looking words); an empty raw memory or summary means "no output". */
export function finishStage1(o: z.infer<typeof Stage1OutputSchema>): Stage1Result {
  return {
    rawMemory: redactSecrets(o.raw_memory),
    rolloutSummary: redactSecrets(o.rollout_summary),
    rolloutSlug: safeSlug(o.rollout_slug),
  };
}

/** The same for any extractor's result: phase 1 stores nothing that did not pass through here. */
export function redactStage1(r: Stage1Result): Stage1Result {
  return finishStage1({ raw_memory: r.rawMemory, rollout_summary: r.rolloutSummary, rollout_slug: r.rolloutSlug });
}

/**
 * The input with every string redacted: extractors call this before deriving anything (titles,
 * slugs, keywords, truncation, the model prompt), so a secret cannot be cut short, lowercased
 * or re-encoded into a form the rules no longer recognise.
 */
export function redactInput(input: ExtractInput): ExtractInput {
  return {
    ...input,
    cwd: redactSecrets(input.cwd),
    gitBranch: input.gitBranch === null ? null : redactSecrets(input.gitBranch),
    items: redactDeep(input.items),
  };
}

export function parseStage1Reply(text: string): Result<Stage1Result> {
  const body = text
    .trim()
    .replace(/^```(?:json)?\s*\n?/i, "")
    .replace(/\n?```\s*$/, "");
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (e) {
    return err("stage1_parse", `the extractor reply is not JSON: ${errorMessage(e)}`);
  }
  const r = Stage1OutputSchema.safeParse(json);
  if (!r.success)
    return err("stage1_parse", `the extractor reply does not match the schema: ${z.prettifyError(r.error)}`);
  return ok(finishStage1(r.data));
}

/** Rough characters per token used for budgets. */
const CHARS_PER_TOKEN = 4;

export function modelExtractor(
  client: ModelClient,
  model: string,
  opts: { inputTokenBudget?: number } = {},
): Extractor {
  const budget = (opts.inputTokenBudget ?? 150_000) * CHARS_PER_TOKEN;
  return async (raw, signal) => {
    const input = redactInput(raw);
    // Leaves are redacted before serialization: JSON escapes would hide quoted values from the rules.
    const conversation = truncateMiddle(JSON.stringify(input.items), budget);
    let text = "";
    let finalText = "";
    try {
      for await (const ev of client.stream(
        {
          model,
          instructions: STAGE1_SYSTEM,
          input: [userMessage(stage1Input(input.rolloutPath, input.cwd, conversation))],
          tools: [],
          parallelToolCalls: false,
        },
        signal,
      )) {
        if (ev.type === "text_delta") text += ev.delta;
        else if (ev.type === "item" && ev.item.type === "message") finalText = messageText(ev.item as MessageItem);
      }
    } catch (e) {
      return err("stage1_model", `extraction failed: ${errorMessage(e)}`);
    }
    return parseStage1Reply(text || finalText);
  };
}

// ---------------------------------------------------------------------------------------------
// Offline heuristic: no model; reads requests, commands, files and the outcome from the items.

const FILE_RE =
  /(?:^|[\s"'`(=])((?:\/|\.{1,2}\/)?(?:[\w.-]+\/)*[\w-]+\.(?:ts|tsx|js|mjs|cjs|json|md|py|rs|go|toml|yaml|yml|sh|sql|txt|css|html|c|h|cpp|java|rb|lock))(?=$|[\s"'`):,;])/g;

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

function commandOf(item: ResponseItem): string | undefined {
  if (item.type === "function_call") {
    const args = (item as { arguments: string }).arguments;
    try {
      const a = JSON.parse(args) as Record<string, unknown>;
      const cmd = a.cmd ?? a.command;
      if (typeof cmd === "string") return cmd;
      if (Array.isArray(cmd)) return cmd.map(String).join(" ");
    } catch {
      return undefined;
    }
    return undefined;
  }
  if (item.type === "local_shell_call") {
    const cmd = (item as { action?: { command?: unknown } }).action?.command;
    return Array.isArray(cmd) ? cmd.map(String).join(" ") : undefined;
  }
  return undefined;
}

function failedOutput(item: ResponseItem): boolean {
  if (item.type !== "function_call_output" && item.type !== "custom_tool_call_output") return false;
  const out = String((item as { output?: unknown }).output ?? "");
  return /exit(?:ed)?(?: with)?(?: code)?[:= ]+(?:[1-9]\d*)|Process exited with code [1-9]|\berror\b|\bfailed\b/i.test(
    out.slice(0, 2000),
  );
}

export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/, "");
}

export function heuristicStage1(raw: ExtractInput): Stage1Result {
  const input = redactInput(raw);
  const requests: string[] = [];
  const commands: string[] = [];
  const files = new Set<string>();
  let failures = 0;
  let lastAssistant = "";
  for (const item of input.items) {
    if (item.type === "message") {
      const m = item as MessageItem;
      const text = messageText(m);
      if (m.role === "user" && text.trim() && !text.trimStart().startsWith("<environment_context>"))
        requests.push(text);
      if (m.role === "assistant" && text.trim()) lastAssistant = text;
      for (const f of text.matchAll(FILE_RE)) files.add(f[1]!);
    }
    const cmd = commandOf(item);
    if (cmd) {
      commands.push(cmd);
      for (const f of cmd.matchAll(FILE_RE)) files.add(f[1]!);
    }
    if (failedOutput(item)) failures++;
  }
  if (!requests.length || (commands.length === 0 && lastAssistant.length < 40)) {
    return { rawMemory: "", rolloutSummary: "", rolloutSlug: null };
  }
  const title = oneLine(requests[0]!, 100);
  const outcome = lastAssistant
    ? failures > 0 && /fail|error|could not|unable/i.test(lastAssistant)
      ? "partial"
      : "success"
    : "uncertain";
  const uniqueCmds = [...new Set(commands.map((c) => oneLine(c, 160)))].slice(0, 12);
  const fileList = [...files].slice(0, 20).map((f) => (path.isAbsolute(f) ? f : path.join(input.cwd, f)));
  // The slug and keywords name the task, not the marker: "deploy with [REDACTED_SECRET]" -> deploy-with.
  const slug = slugify(withoutMarkers(title));
  const keywords = [...new Set(slug.split("-").filter((w) => w.length > 3))].slice(0, 8);
  const summary = [
    `# ${title}`,
    "",
    `- cwd: ${input.cwd}`,
    input.gitBranch ? `- git_branch: ${input.gitBranch}` : undefined,
    `- outcome: ${outcome}${failures ? ` (${failures} failing tool result(s) along the way)` : ""}`,
    "",
    "## Requests",
    ...requests.slice(0, 6).map((r) => `- ${oneLine(r, 300)}`),
    "",
    uniqueCmds.length ? "## Commands" : undefined,
    ...uniqueCmds.map((c) => `- \`${c}\``),
    fileList.length ? "\n## Files" : undefined,
    ...fileList.map((f) => `- ${f}`),
    lastAssistant ? "\n## Final answer" : undefined,
    lastAssistant ? oneLine(lastAssistant, 800) : undefined,
  ]
    .filter((l) => l !== undefined)
    .join("\n");
  const rawMemory = [
    "---",
    `description: ${title}`,
    `keywords: ${keywords.join(", ")}`,
    "---",
    `- task: ${title} (outcome: ${outcome}, cwd: ${input.cwd})`,
    ...uniqueCmds.slice(0, 5).map((c) => `- command used: \`${c}\``),
    ...fileList.slice(0, 8).map((f) => `- file touched: ${f}`),
  ].join("\n");
  return redactStage1({ rawMemory, rolloutSummary: summary, rolloutSlug: slug || null });
}

export const heuristicExtractor: Extractor = async (input) => ok(heuristicStage1(input));

/** Renders session events for people (stderr progress, streamed answer on stdout) or as JSONL. */
import type { SessionEvent } from "../contracts/events.ts";

const isTty = (s: NodeJS.WritableStream) => Boolean((s as { isTTY?: boolean }).isTTY);
const ERASE_LINE = "\r\x1b[2K";
type Paint = (s: string) => string;

export function jsonRenderer(out: NodeJS.WritableStream = process.stdout): (e: SessionEvent) => void {
  return (e) => {
    out.write(JSON.stringify(e) + "\n");
  };
}

/**
 * "waiting for model · 12 s" on one stderr line that redraws itself each second; erased as soon
 * as anything else is printed. Only on a terminal: a log file gets no line per second.
 */
class WaitingLine {
  private timer: ReturnType<typeof setInterval> | undefined;
  private shown = false;
  private seconds = 0;
  private at = 0;

  constructor(
    private readonly err: NodeJS.WritableStream,
    private readonly dim: Paint,
  ) {}

  /** A heartbeat: the model has been silent for `seconds`; counts on from there each second. */
  show(seconds: number): void {
    this.seconds = seconds;
    this.at = Date.now();
    this.draw();
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.draw(), 1000);
    (this.timer as { unref?: () => void }).unref?.();
  }

  clear(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.shown) this.err.write(ERASE_LINE);
    this.shown = false;
  }

  private draw(): void {
    const s = this.seconds + Math.floor((Date.now() - this.at) / 1000);
    this.err.write(`${ERASE_LINE}${this.dim(`waiting for model · ${s} s`)}`);
    this.shown = true;
  }
}

function formatDelay(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** A tool result: ✓/✗ with the exit code or first line, then the first few lines of its output. */
function toolResultLines(
  e: Extract<SessionEvent, { type: "tool_result" }>,
  p: { dim: Paint; red: Paint; green: Paint },
): string {
  const first = /Process exited with code (-?\d+)/.exec(e.output)?.[1];
  const running = /Process running with session ID (\d+)/.exec(e.output)?.[1];
  const what = running
    ? `running as session ${running}`
    : first !== undefined
      ? `exit ${first}`
      : e.success
        ? "ok"
        : e.output.split("\n")[0]!.slice(0, 200);
  const out = [`  ${e.success ? p.green("✓") : p.red("✗")} ${p.dim(what)}\n`];
  const output = e.output.includes("\nOutput:\n") ? e.output.slice(e.output.indexOf("\nOutput:\n") + 9) : "";
  const lines = output.split("\n").filter((l) => l.trim() !== "");
  for (const l of lines.slice(0, 4)) out.push(p.dim(`    ${l.slice(0, 160)}\n`));
  if (lines.length > 4) out.push(p.dim(`    … ${lines.length - 4} more lines\n`));
  if (e.full_output_path) out.push(p.dim(`    full output: ${e.full_output_path}\n`));
  return out.join("");
}

/** The session header's sandbox line, and what the kernel cannot enforce here. */
function sandboxLines(
  e: Extract<SessionEvent, { type: "sandbox" }>,
  p: { dim: (s: string) => string; red: (s: string) => string },
): string {
  const head = e.refused
    ? p.red(`relay: sandbox: every command will be refused: ${e.refused}\n`)
    : p.dim(`sandbox ${e.mode}${e.mechanism === "none" ? "" : ` · ${e.mechanism}`}\n`);
  return head + (e.gaps.length ? p.red(`relay: sandbox: not enforced here: ${e.gaps.join("; ")}\n`) : "");
}

export interface HumanRendererOptions {
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  color?: boolean;
  /** Show the live "waiting for model" line (default: when stderr is a terminal). */
  live?: boolean;
}

export function humanRenderer(opts: HumanRendererOptions = {}): (e: SessionEvent) => void {
  const out = opts.stdout ?? process.stdout;
  const err = opts.stderr ?? process.stderr;
  const c = opts.color ?? (isTty(err) && !process.env.NO_COLOR);
  const dim = (s: string) => (c ? `\x1b[2m${s}\x1b[0m` : s);
  const red = (s: string) => (c ? `\x1b[31m${s}\x1b[0m` : s);
  const green = (s: string) => (c ? `\x1b[32m${s}\x1b[0m` : s);
  let midLine = false;
  let sessionId: string | undefined;
  const endLine = () => {
    if (midLine) out.write("\n");
    midLine = false;
  };
  const waiting = (opts.live ?? isTty(err)) ? new WaitingLine(err, dim) : undefined;
  const colors: Colors = { dim, red, green };
  return (e) => {
    if (e.type === "waiting") {
      // A half-printed answer on the same terminal would be overwritten: it shows the wait anyway.
      if (!(midLine && isTty(out))) waiting?.show(e.seconds);
      return;
    }
    waiting?.clear();
    if (e.type === "session_started") sessionId = e.session_id;
    if (e.type === "text_delta") {
      out.write(e.delta);
      midLine = !e.delta.endsWith("\n");
      return;
    }
    const status = statusText(e, colors);
    if (status !== undefined) {
      err.write(status);
      return;
    }
    const line = lineAfterAnswer(e, colors, sessionId);
    if (line === undefined) return;
    endLine();
    if (line) err.write(line);
  };
}

interface Colors {
  dim: Paint;
  red: Paint;
  green: Paint;
}

/** What an event prints on stderr where the answer's line may go on after it. */
function statusText(e: SessionEvent, { dim, red, green }: Colors): string | undefined {
  switch (e.type) {
    case "session_started":
      return dim(
        `relay ${e.resumed ? "resumed" : "session"} ${e.session_id}${e.forked_from ? ` (forked from ${e.forked_from})` : ""} · ${e.provider}/${e.model} · ${e.cwd}\n`,
      );
    case "project_docs":
      return dim(`instructions ${e.files.map((f) => `${f.path}${f.truncated ? " (cut)" : ""}`).join(", ")}\n`);
    case "sandbox":
      return sandboxLines(e, { dim, red });
    case "tool_result":
      return toolResultLines(e, { dim, red, green });
    case "context_compacted":
      return dim(
        `  context compacted: ${e.items_before} items -> ${e.items_after}${e.fallback ? " (fallback: older tool outputs emptied)" : ""}\n`,
      );
    default:
      return undefined;
  }
}

/** What an event prints once the answer's line is ended ("" to only end it); undefined: nothing. */
function lineAfterAnswer(e: SessionEvent, { dim, red }: Colors, sessionId: string | undefined): string | undefined {
  switch (e.type) {
    case "mcp_server":
      // Failures and exits also come as warnings; the rest is progress.
      return e.state === "ready"
        ? dim(
            `mcp ${e.server} · ${e.tools ?? 0} tool${e.tools === 1 ? "" : "s"}${e.message ? ` · ${e.message}` : ""}\n`,
          )
        : undefined;
    case "assistant_message":
    case "turn_completed":
      return "";
    case "tool_call":
      return `${dim("▸")} ${e.name}: ${e.display.split("\n")[0]!.slice(0, 160)}\n`;
    case "retrying":
      return dim(
        `  ${e.reason}; retrying (${e.attempt}/${e.max_retries}) in ${formatDelay(e.delay_ms)}${e.discarded_partial ? "; the partial answer above is dropped and comes again" : ""}\n`,
      );
    case "warning":
      return `relay: warning: ${e.message}\n`;
    case "error":
      return red(`relay: ${e.message}\n`);
    case "turn_aborted":
      return `relay: interrupted; the session is saved. Continue it with: relay run --resume ${sessionId ?? "last"} "<what next>"\n`;
    default:
      return undefined;
  }
}

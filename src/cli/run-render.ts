/** Renders session events for people (stderr progress, streamed answer on stdout) or as JSONL. */
import type { SessionEvent } from "../session/events.ts";

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
function toolResultLines(e: Extract<SessionEvent, { type: "tool_result" }>, p: { dim: Paint; red: Paint; green: Paint }): string {
  const first = /Process exited with code (-?\d+)/.exec(e.output)?.[1];
  const running = /Process running with session ID (\d+)/.exec(e.output)?.[1];
  const what = running ? `running as session ${running}` : first !== undefined ? `exit ${first}` : e.success ? "ok" : e.output.split("\n")[0]!.slice(0, 200);
  const out = [`  ${e.success ? p.green("✓") : p.red("✗")} ${p.dim(what)}\n`];
  const output = e.output.includes("\nOutput:\n") ? e.output.slice(e.output.indexOf("\nOutput:\n") + 9) : "";
  const lines = output.split("\n").filter((l) => l.trim() !== "");
  for (const l of lines.slice(0, 4)) out.push(p.dim(`    ${l.slice(0, 160)}\n`));
  if (lines.length > 4) out.push(p.dim(`    … ${lines.length - 4} more lines\n`));
  if (e.full_output_path) out.push(p.dim(`    full output: ${e.full_output_path}\n`));
  return out.join("");
}

/** The session header's sandbox line, and what the kernel cannot enforce here. */
function sandboxLines(e: Extract<SessionEvent, { type: "sandbox" }>, p: { dim: (s: string) => string; red: (s: string) => string }): string {
  const head = e.refused ? p.red(`relay: sandbox: every command will be refused: ${e.refused}\n`) : p.dim(`sandbox ${e.mode}${e.mechanism === "none" ? "" : ` · ${e.mechanism}`}\n`);
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
  return (e) => {
    if (e.type === "waiting") {
      // A half-printed answer on the same terminal would be overwritten: it shows the wait anyway.
      if (!(midLine && isTty(out))) waiting?.show(e.seconds);
      return;
    }
    waiting?.clear();
    switch (e.type) {
      case "session_started":
        sessionId = e.session_id;
        err.write(dim(`relay ${e.resumed ? "resumed" : "session"} ${e.session_id}${e.forked_from ? ` (forked from ${e.forked_from})` : ""} · ${e.provider}/${e.model} · ${e.cwd}\n`));
        return;
      case "project_docs":
        err.write(dim(`instructions ${e.files.map((f) => `${f.path}${f.truncated ? " (cut)" : ""}`).join(", ")}\n`));
        return;
      case "sandbox":
        err.write(sandboxLines(e, { dim, red }));
        return;
      case "mcp_server":
        // Failures and exits also come as warnings; the rest is progress.
        if (e.state === "ready") {
          endLine();
          err.write(dim(`mcp ${e.server} · ${e.tools ?? 0} tool${e.tools === 1 ? "" : "s"}${e.message ? ` · ${e.message}` : ""}\n`));
        }
        return;
      case "text_delta":
        out.write(e.delta);
        midLine = !e.delta.endsWith("\n");
        return;
      case "assistant_message":
        endLine();
        return;
      case "tool_call":
        endLine();
        err.write(`${dim("▸")} ${e.name}: ${e.display.split("\n")[0]!.slice(0, 160)}\n`);
        return;
      case "tool_result":
        err.write(toolResultLines(e, { dim, red, green }));
        return;
      case "retrying":
        endLine();
        err.write(dim(`  ${e.reason}; retrying (${e.attempt}/${e.max_retries}) in ${formatDelay(e.delay_ms)}${e.discarded_partial ? "; the partial answer above is dropped and comes again" : ""}\n`));
        return;
      case "context_compacted":
        err.write(dim(`  context compacted: ${e.items_before} items -> ${e.items_after}${e.fallback ? " (fallback: older tool outputs emptied)" : ""}\n`));
        return;
      case "warning":
        endLine();
        err.write(`relay: warning: ${e.message}\n`);
        return;
      case "error":
        endLine();
        err.write(red(`relay: ${e.message}\n`));
        return;
      case "turn_aborted":
        endLine();
        err.write(`relay: interrupted; the session is saved. Continue it with: relay run --resume ${sessionId ?? "last"} "<what next>"\n`);
        return;
      case "turn_completed":
        endLine();
        return;
      default:
        return;
    }
  };
}

/** Renders session events for people (stderr progress, streamed answer on stdout) or as JSONL. */
import type { SessionEvent } from "../session/events.ts";

export function jsonRenderer(out: NodeJS.WritableStream = process.stdout): (e: SessionEvent) => void {
  return (e) => {
    out.write(JSON.stringify(e) + "\n");
  };
}

export function humanRenderer(opts: { stdout?: NodeJS.WritableStream; stderr?: NodeJS.WritableStream; color?: boolean } = {}): (e: SessionEvent) => void {
  const out = opts.stdout ?? process.stdout;
  const err = opts.stderr ?? process.stderr;
  const c = opts.color ?? (Boolean((err as { isTTY?: boolean }).isTTY) && !process.env.NO_COLOR);
  const dim = (s: string) => (c ? `\x1b[2m${s}\x1b[0m` : s);
  const red = (s: string) => (c ? `\x1b[31m${s}\x1b[0m` : s);
  const green = (s: string) => (c ? `\x1b[32m${s}\x1b[0m` : s);
  let midLine = false;
  const endLine = () => {
    if (midLine) out.write("\n");
    midLine = false;
  };
  return (e) => {
    switch (e.type) {
      case "session_started":
        err.write(dim(`relay ${e.resumed ? "resumed" : "session"} ${e.session_id} · ${e.provider}/${e.model} · ${e.cwd}\n`));
        return;
      case "project_docs":
        err.write(dim(`instructions ${e.files.map((f) => `${f.path}${f.truncated ? " (cut)" : ""}`).join(", ")}\n`));
        return;
      case "sandbox":
        if (e.refused) err.write(red(`relay: sandbox: every command will be refused: ${e.refused}\n`));
        else err.write(dim(`sandbox ${e.mode}${e.mechanism === "none" ? "" : ` · ${e.mechanism}`}\n`));
        if (e.gaps.length) err.write(red(`relay: sandbox is best effort; not enforced here: ${e.gaps.join("; ")}\n`));
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
      case "tool_result": {
        const first = /Process exited with code (-?\d+)/.exec(e.output)?.[1];
        const running = /Process running with session ID (\d+)/.exec(e.output)?.[1];
        const what = running ? `running as session ${running}` : first !== undefined ? `exit ${first}` : e.success ? "ok" : e.output.split("\n")[0]!.slice(0, 200);
        err.write(`  ${e.success ? green("✓") : red("✗")} ${dim(what)}\n`);
        const output = e.output.includes("\nOutput:\n") ? e.output.slice(e.output.indexOf("\nOutput:\n") + 9) : "";
        const lines = output.split("\n").filter((l) => l.trim() !== "");
        for (const l of lines.slice(0, 4)) err.write(dim(`    ${l.slice(0, 160)}\n`));
        if (lines.length > 4) err.write(dim(`    … ${lines.length - 4} more lines\n`));
        return;
      }
      case "retrying":
        err.write(dim(`  retrying the model request (attempt ${e.attempt}) in ${e.delay_ms} ms: ${e.reason}\n`));
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
        err.write("relay: interrupted; the session is saved and can be resumed\n");
        return;
      case "turn_completed":
        endLine();
        return;
      default:
        return;
    }
  };
}

/**
 * Incremental Server-Sent-Events parser (WHATWG event-stream format) over a byte stream.
 * Accepts `\n`, `\r\n` and `\r` line endings, chunks split anywhere (even inside a UTF-8
 * sequence or a CRLF pair), and yields a last event that has no trailing blank line.
 */

export interface SseEvent {
  /** The `event:` field, when the server named the event. */
  event?: string;
  /** `data:` lines joined with `\n`. */
  data: string;
  id?: string;
}

/** Push decoded text in, get complete events out. */
export class SseDecoder {
  private line = "";
  private afterCR = false;
  private data: string[] = [];
  private event: string | undefined;
  private id: string | undefined;

  push(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 /* \n */) {
        if (this.afterCR && i === start && this.line === "") {
          // Second half of a CRLF whose CR ended the previous line.
          this.afterCR = false;
          start = i + 1;
          continue;
        }
        this.endLine(this.line + text.slice(start, i), out);
        start = i + 1;
      } else if (c === 13 /* \r */) {
        this.endLine(this.line + text.slice(start, i), out);
        start = i + 1;
        this.afterCR = true;
        continue;
      }
      this.afterCR = false;
    }
    if (start < text.length) {
      this.line += text.slice(start);
      this.afterCR = false;
    }
    return out;
  }

  /** End of stream: an unterminated line and an event without its blank line still count. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.line !== "") this.endLine(this.line, out);
    this.dispatch(out);
    return out;
  }

  private endLine(line: string, out: SseEvent[]): void {
    this.line = "";
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return; // comment / keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      default:
        break; // `retry` and unknown fields are ignored
    }
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data.length > 0) {
      const ev: SseEvent = { data: this.data.join("\n") };
      if (this.event !== undefined && this.event !== "") ev.event = this.event;
      if (this.id !== undefined) ev.id = this.id;
      out.push(ev);
    }
    this.data = [];
    this.event = undefined;
  }
}

export interface ParseSseOptions {
  /** Cancels the byte stream; the generator then ends (the caller decides what an abort means). */
  signal?: AbortSignal;
  /** Called for every chunk received, keep-alive comments included (idle timers). */
  onBytes?: () => void;
}

/** Yields events from a byte stream; cancels the stream when the consumer stops early. */
export async function* parseSse(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  opts: ParseSseOptions = {},
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder("utf-8");
  const sse = new SseDecoder();
  if (isReadableStream(body)) {
    const reader = body.getReader();
    const onAbort = () => void reader.cancel(opts.signal?.reason).catch(() => {});
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let finished = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        opts.onBytes?.();
        yield* sse.push(decoder.decode(value, { stream: true }));
      }
      finished = true;
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      if (!finished) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  } else {
    for await (const chunk of body) {
      opts.onBytes?.();
      yield* sse.push(decoder.decode(chunk, { stream: true }));
    }
  }
  yield* sse.push(decoder.decode());
  yield* sse.end();
}

function isReadableStream(x: unknown): x is ReadableStream<Uint8Array> {
  return typeof (x as ReadableStream | undefined)?.getReader === "function";
}

/**
 * JSON payloads of one event's data. Some local servers frame events with a single `\n`, which
 * joins several `data:` lines into one event; when the whole data is not JSON, each line is
 * tried on its own. `[DONE]` comes back as the string "[DONE]". Throws on data that is neither.
 */
export function jsonPayloads(data: string): unknown[] {
  const one = tryJson(data);
  if (one.ok) return [one.value];
  const lines = data.split("\n").filter((l) => l.trim() !== "");
  if (lines.length > 1) {
    const values = lines.map(tryJson);
    if (values.every((v) => v.ok)) return values.map((v) => (v as { value: unknown }).value);
  }
  throw new SyntaxError(`event data is not JSON: ${data.length > 200 ? `${data.slice(0, 200)}…` : data}`);
}

function tryJson(text: string): { ok: true; value: unknown } | { ok: false } {
  const t = text.trim();
  if (t === "[DONE]") return { ok: true, value: "[DONE]" };
  try {
    return { ok: true, value: JSON.parse(t) };
  } catch {
    return { ok: false };
  }
}

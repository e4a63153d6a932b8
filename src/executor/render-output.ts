/**
 * Makes terminal output readable for a model: CRLF becomes LF, ANSI escape sequences go, and a
 * bare carriage return overwrites the line the way a terminal shows it (a progress bar that
 * redraws itself 500 times leaves one line, not 500).
 */
// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-byte ESC sequences.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

export function renderTerminalText(text: string): string {
  const cleaned = text.replace(ANSI, "").replace(/\r+\n/g, "\n");
  if (!cleaned.includes("\r")) return cleaned;
  return cleaned
    .split("\n")
    .map((line) => {
      if (!line.includes("\r")) return line;
      // What remains visible: each segment overwrites the start of the line.
      let shown = "";
      for (const seg of line.split("\r")) shown = seg + shown.slice(seg.length);
      return shown;
    })
    .join("\n");
}

/**
 * Splits off an incomplete UTF-8 sequence at the end of `bytes` so it can be prepended to the
 * next read instead of turning into a replacement character.
 */
export function splitUtf8Tail(bytes: Uint8Array): { complete: Uint8Array; rest: Uint8Array } {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    if (need > back) return { complete: bytes.subarray(0, n - back), rest: bytes.subarray(n - back) };
    break;
  }
  return { complete: bytes, rest: new Uint8Array(0) };
}

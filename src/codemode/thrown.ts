/** A value a script threw, as the text of the cell's error. */
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

export const MAX_ERROR_CHARS = 64 * 1024;

/** Strings as they are, errors as `Name: message` and their stack, else JSON; middle-cut at MAX_ERROR_CHARS. */
export function describeThrown(ctx: QuickJSContext, h: QuickJSHandle): string {
  let text: string;
  try {
    if (ctx.typeof(h) === "string") {
      text = ctx.getString(h);
    } else {
      const d = ctx.dump(h) as unknown;
      if (d && typeof d === "object" && "message" in d) {
        const o = d as { name?: unknown; message?: unknown; stack?: unknown };
        const head = `${typeof o.name === "string" ? o.name : "Error"}: ${String(o.message)}`;
        text = typeof o.stack === "string" && o.stack.trim() ? `${head}\n${o.stack.trimEnd()}` : head;
      } else {
        const s = JSON.stringify(d);
        text = s === undefined ? String(d) : s;
      }
    }
  } catch {
    return "uncaught exception (could not be described)";
  }
  if (text.length <= MAX_ERROR_CHARS) return text;
  const half = MAX_ERROR_CHARS / 2;
  return `${text.slice(0, half)}\n[... ${text.length - MAX_ERROR_CHARS} characters omitted ...]\n${text.slice(-half)}`;
}

/**
 * What a cell wrote with `text()` since its last yield. It lives in the host's heap, outside
 * the QuickJS limit, so it is capped: a response must fit a 16 MiB frame.
 */
import type { ContentItem } from "../../contracts/code-mode.ts";

/** Output characters kept between two yields (each item also counts ITEM_COST). */
export const MAX_PENDING_OUTPUT = 1 << 20;
/** Output characters a cell may write beyond what it keeps, in its whole life: more ends it (a print loop). */
export const MAX_DROPPED_OUTPUT = 64 << 20;
const ITEM_COST = 32;

export class CellOutput {
  private items: ContentItem[] = [];
  private pendingCost = 0;
  private droppedChars = 0;
  private droppedTotal = 0;

  /** Characters a text may still have; the VM cuts a longer one there (never copying the rest out). */
  get room(): number {
    return MAX_PENDING_OUTPUT - this.pendingCost - ITEM_COST;
  }

  /** `s` is what `room` let through of a text `length` characters long; the limit text when a print loop must end. */
  add(s: string, length: number): string | undefined {
    this.droppedChars += length - s.length;
    this.droppedTotal += length - s.length;
    if (this.droppedTotal > MAX_DROPPED_OUTPUT)
      return `wrote more than ${MAX_DROPPED_OUTPUT} characters of output it could not keep (at most ${MAX_PENDING_OUTPUT} between yields)`;
    if (s.length === 0) return undefined;
    this.items.push({ type: "input_text", text: s });
    this.pendingCost += s.length + ITEM_COST;
    return undefined;
  }

  /** The items since the last drain, with a note of what was dropped. */
  drain(): ContentItem[] {
    const out = this.items;
    if (this.droppedChars > 0) {
      out.push({
        type: "input_text",
        text: `[${this.droppedChars} more characters of output were dropped: a cell keeps at most ${MAX_PENDING_OUTPUT} between yields]`,
      });
    }
    this.items = [];
    this.pendingCost = 0;
    this.droppedChars = 0;
    return out;
  }
}

/** One page of a paged tool output (read_file's lines, list_dir's entries) and its closing note. */
import type { ToolOutput } from "../tool.ts";

export interface Page {
  /** The numbered items shown, already formatted. */
  lines: string[];
  /** True when items remain after the page. */
  more: boolean;
  /** How many items there are in all; known only when none remain. */
  total: number;
}

export interface PageRequest {
  tool: string;
  unit: "line" | "entry";
  path: string;
  /** 1-based number of the first item shown. */
  offset: number;
  /** Lines printed before the items (list_dir's header). */
  head: string[];
}

const PLURAL = { line: "lines", entry: "entries" } as const;

/** The page as text, ending with the offset to continue from when more remain, and its metadata. */
export function pageOutput(req: PageRequest, page: Page): ToolOutput {
  const { unit, offset } = req;
  const end = offset + page.lines.length - 1;
  const text = [...req.head, ...page.lines];
  if (page.more) {
    text.push(
      `[More ${PLURAL[unit]} remain after ${unit} ${end}. To continue, call ${req.tool} with offset=${end + 1}.]`,
    );
  }
  return {
    text: text.join("\n"),
    metadata: {
      path: req.path,
      [`start_${unit}`]: offset,
      [`end_${unit}`]: end,
      more: page.more,
      ...(page.more ? { next_offset: end + 1 } : { [`total_${PLURAL[unit]}`]: page.total }),
    },
  };
}

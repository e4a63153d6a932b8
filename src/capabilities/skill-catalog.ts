/**
 * The skills catalog in a session's developer instructions: names and descriptions only (bodies
 * are read on demand), within a hard bound. Each entry is at most SKILL_ENTRY_MAX_BYTES (a long
 * description is cut with "…"), the whole block at most SKILLS_CATALOG_MAX_BYTES; skills past
 * the bound are counted in a last line. Hidden skills (front matter `hidden: true`) are not
 * listed, but stay invocable by name.
 */
import { fillPrompt } from "../util/prompt-template.ts";
import { wholeCharsEnd } from "../util/utf8.ts";
import * as prompts from "./prompts.generated.ts";
import { describeSource, type SelectedSkill } from "./skill-sources.ts";
import { SKILL_TOOL } from "./skill-tool.ts";

/** The whole catalog, heading and last line included: about 2k tokens. */
export const SKILLS_CATALOG_MAX_BYTES = 8 * 1024;
/** One entry (name, description, where it lives). */
export const SKILL_ENTRY_MAX_BYTES = 512;

/** The catalog's heading and what skills are for (prompts/skills-catalog.md); the entries follow on their own lines. */
const HEAD = `${fillPrompt(prompts.SKILLS_CATALOG, { skill_tool: SKILL_TOOL })}\n`;

/** `text` cut to at most `max` bytes, ending in "…" when cut. */
function fitBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const head = Buffer.from(text).subarray(0, Math.max(0, max - 3));
  const cut = head.subarray(0, wholeCharsEnd(head)).toString("utf8");
  return `${cut}…`;
}

export function catalogEntry(s: SelectedSkill, max = SKILL_ENTRY_MAX_BYTES): string {
  const name = fitBytes(s.name, 96);
  const where = ` (${s.source.kind === "local" ? "local" : describeSource(s.source)})`;
  const fixed = `- ${name}: ${where}\n`;
  const description = fitBytes(s.description.replace(/\s+/g, " ").trim(), max - Buffer.byteLength(fixed));
  return fitBytes(`- ${name}: ${description}${where}`, max - 1) + "\n";
}

export interface Catalog {
  text: string;
  listed: number;
  /** Left out for the byte bound. */
  omitted: number;
  hidden: number;
}

export function skillsCatalog(skills: SelectedSkill[], maxBytes = SKILLS_CATALOG_MAX_BYTES): Catalog {
  const visible = skills.filter((s) => !s.hidden);
  const hidden = skills.length - visible.length;
  if (visible.length === 0) return { text: "", listed: 0, omitted: 0, hidden };
  let text = HEAD;
  let listed = 0;
  // Room is kept for the last line, which says how many were left out.
  const tailRoom = 120;
  for (const s of visible) {
    const line = catalogEntry(s);
    if (Buffer.byteLength(text) + Buffer.byteLength(line) > maxBytes - tailRoom) break;
    text += line;
    listed++;
  }
  const omitted = visible.length - listed;
  if (omitted > 0)
    text += `- … ${omitted} more skill${omitted === 1 ? "" : "s"} not listed (the catalog is limited to ${maxBytes} bytes); ${SKILL_TOOL} still reads any skill by name\n`;
  return { text, listed, omitted, hidden };
}

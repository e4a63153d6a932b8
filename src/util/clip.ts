/** Cutting text for listings and transcripts: bounded, and saying what was cut. */

/** The text on one line (whitespace runs become one space), cut to `max` characters with "…". */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

/**
 * At most `maxLines` lines and `maxChars` characters of `text`; when anything was cut, a last
 * line says how many lines (or characters) were left out.
 */
export function clipLines(text: string, maxLines: number, maxChars: number): string {
  const lines = text.replace(/\s+$/, "").split("\n");
  let kept = lines.slice(0, maxLines).join("\n");
  const cutChars = kept.length > maxChars;
  if (cutChars) kept = kept.slice(0, maxChars);
  const droppedLines = lines.length - Math.min(lines.length, maxLines);
  if (droppedLines > 0) return `${kept}\n… (${droppedLines} more line${droppedLines === 1 ? "" : "s"})`;
  if (cutChars) return `${kept}… (${text.trimEnd().length - maxChars} more characters)`;
  return kept;
}

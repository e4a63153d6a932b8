/**
 * Writes src/<room>/prompts.generated.ts for every room with a prompts/ folder: each Markdown
 * prompt src/<room>/prompts/<name>.md (a README.md there is about the folder, not a prompt)
 * becomes the constant NAME (kebab-case to UPPER_SNAKE): a string, or, when its text has
 * {{placeholders}}, a PromptTemplate that util/prompt-template.ts's fillPrompt fills in. The
 * generated modules are committed plain TypeScript, so Bun, the compiled binary, Node and Deno
 * all embed the prompts with no loader or text import; test/util/prompts.test.ts fails when one
 * is stale.
 *
 * A prompt's text is its file's UTF-8 text less the file's final newline. Every prompt file ends
 * in exactly one "\n" (a file without one, or with a blank line or "\r" at its end, is refused),
 * and no prompt ends in a newline: code that needs one after a prompt adds it. Nothing else is
 * changed, so a file holds what the model sees, line for line. A placeholder is `{{name}}`
 * (lowercase, digits, `_`); any other `{{` or `}}` is refused as a typo.
 *   bun scripts/build-prompts.ts          (npm run build:prompts)
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { placeholdersOf, strayBraces } from "../src/util/prompt-template.ts";

/** One prompt file, read and checked. */
export interface PromptFile {
  /** From the repository's top, with `/`: src/infty/prompts/solver.md. */
  source: string;
  /** The constant it becomes: SOLVER. */
  name: string;
  text: string;
  placeholders: string[];
}

const FILE_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*\.md$/;

/** The rooms of `root`/src with a prompts/ folder, sorted. */
export function promptRooms(root: string): string[] {
  const src = path.join(root, "src");
  return readdirSync(src)
    .filter((room) => existsSync(path.join(src, room, "prompts")))
    .sort();
}

/** What a prompt file's bytes make, or why they are refused. */
export function promptText(source: string, raw: string): { text: string } | { error: string } {
  if (raw.includes("\r")) return { error: `${source} has a "\\r": prompt files have "\\n" line ends only` };
  if (!raw.endsWith("\n")) return { error: `${source} does not end in a newline` };
  const text = raw.slice(0, -1);
  if (text.endsWith("\n") || text === "")
    return { error: `${source} ends in a blank line (or is empty): its one final newline is not part of the prompt` };
  const stray = strayBraces(text);
  if (stray.length > 0)
    return { error: `${source} has "{{" or "}}" that is not a {{placeholder}} at ${stray.join(", ")}` };
  return { text };
}

/** The prompt files of a room, sorted by name; throws with every problem found. */
export function readPrompts(root: string, room: string): PromptFile[] {
  const dir = path.join(root, "src", room, "prompts");
  const problems: string[] = [];
  const files: PromptFile[] = [];
  for (const entry of readdirSync(dir).sort()) {
    if (entry === "README.md") continue;
    const source = `src/${room}/prompts/${entry}`;
    if (!FILE_NAME.test(entry)) {
      problems.push(`${source}: a prompt is a file named like solver.md or final-check.md (lowercase, digits, "-")`);
      continue;
    }
    const read = promptText(source, readFileSync(path.join(dir, entry), "utf8"));
    if ("error" in read) {
      problems.push(read.error);
      continue;
    }
    const name = entry.slice(0, -".md".length).replaceAll("-", "_").toUpperCase();
    files.push({ source, name, text: read.text, placeholders: placeholdersOf(read.text) });
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
  return files;
}

export function promptsModulePath(root: string, room: string): string {
  return path.join(root, "src", room, "prompts.generated.ts");
}

/**
 * `text` as a string literal the way Biome writes it (so the generated modules read as formatted
 * code): in double quotes, unless it holds more double quotes than single ones.
 */
export function stringLiteral(text: string): string {
  const json = JSON.stringify(text);
  const doubles = text.split('"').length - 1;
  const singles = text.split("'").length - 1;
  if (doubles <= singles) return json;
  return `'${json.slice(1, -1).replaceAll('\\"', '"').replaceAll("'", "\\'")}'`;
}

/** `export const NAME = "…";` as Biome lays it out: on one line when it fits in 120 columns. */
function stringConstant(name: string, text: string): string {
  const value = stringLiteral(text);
  const oneLine = `export const ${name} = ${value};`;
  return oneLine.length <= 120 ? oneLine : `export const ${name} =\n  ${value};`;
}

function templateConstant(p: PromptFile): string {
  const type = p.placeholders.map((n) => JSON.stringify(n)).join(" | ");
  return [
    `export const ${p.name}: PromptTemplate<${type}> = {`,
    `  source: ${JSON.stringify(p.source)},`,
    `  text: ${stringLiteral(p.text)},`,
    `  placeholders: [${p.placeholders.map((n) => JSON.stringify(n)).join(", ")}],`,
    `};`,
  ].join("\n");
}

/** The text src/<room>/prompts.generated.ts must hold for the room's prompt files as they are now. */
export function promptsModuleSource(root: string, room: string): string {
  const prompts = readPrompts(root, room);
  const head = [
    `// Generated by scripts/build-prompts.ts from src/${room}/prompts/*.md (npm run build:prompts); do not edit.`,
  ];
  if (prompts.some((p) => p.placeholders.length > 0))
    head.push(`import type { PromptTemplate } from "../util/prompt-template.ts";`);
  const constants = prompts.map(
    (p) => `/** ${p.source} */\n${p.placeholders.length > 0 ? templateConstant(p) : stringConstant(p.name, p.text)}`,
  );
  return `${[head.join("\n"), ...constants].join("\n\n")}\n`;
}

if (import.meta.main) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  for (const room of promptRooms(root)) {
    const file = promptsModulePath(root, room);
    const text = promptsModuleSource(root, room);
    writeFileSync(file, text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), file)} (${readPrompts(root, room).length} prompts)\n`);
  }
}

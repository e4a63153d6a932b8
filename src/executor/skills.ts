/**
 * Skills discovery on the executor's own filesystem: a skill is a folder with a SKILL.md whose
 * front matter names and describes it. The orchestrator never reads these files locally, so a
 * remote executor's skills are the remote host's.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineMethod } from "../protocol/method.ts";
import { err, ok, type Result } from "../util/result.ts";

export const SkillSchema = z.object({
  name: z.string(),
  description: z.string(),
  path: z.string(),
  root: z.string(),
});
export type Skill = z.infer<typeof SkillSchema>;

export const SkillsListMethod = defineMethod(
  "skills/list",
  z.object({ roots: z.array(z.string()), max_depth: z.number().int().min(0).max(6).default(3) }),
  z.object({ skills: z.array(SkillSchema), warnings: z.array(z.object({ root: z.string(), message: z.string() })) }),
);

export const SkillsReadMethod = defineMethod("skills/read", z.object({ path: z.string() }), z.object({ body: z.string(), bytes: z.number() }));

const MAX_SKILL_BYTES = 256 * 1024;

/** Parses `---\nname: x\ndescription: y\n---` (single-line values, optional quotes). */
export function parseFrontMatter(text: string): { fields: Record<string, string>; body: string } | undefined {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (!m) return undefined;
  const fields: Record<string, string> = {};
  for (const line of m[1]!.split(/\r?\n/)) {
    const kv = /^([A-Za-z0-9_-]+)\s*:\s*(.*)$/.exec(line);
    if (kv) fields[kv[1]!] = kv[2]!.trim().replace(/^(["'])(.*)\1$/, "$2");
  }
  return { fields, body: text.slice(m[0].length) };
}

export async function discoverSkills(roots: string[], maxDepth = 3): Promise<{ skills: Skill[]; warnings: { root: string; message: string }[] }> {
  const skills: Skill[] = [];
  const warnings: { root: string; message: string }[] = [];
  for (const root of roots) {
    if (!path.isAbsolute(root)) {
      warnings.push({ root, message: "capability root must be an absolute path on the executor host" });
      continue;
    }
    try {
      const s = await stat(root);
      if (!s.isDirectory()) throw new Error("not a directory");
    } catch (e) {
      warnings.push({ root, message: `unavailable on the executor host: ${(e as Error).message}` });
      continue;
    }
    const walk = async (dir: string, depth: number): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      const skillFile = entries.find((e) => e.isFile() && e.name === "SKILL.md");
      if (skillFile) {
        const file = path.join(dir, "SKILL.md");
        const text = await readFile(file, "utf8").catch(() => "");
        const fm = parseFrontMatter(text.slice(0, 16 * 1024));
        if (fm?.fields.name && fm.fields.description) {
          skills.push({ name: fm.fields.name, description: fm.fields.description, path: file, root });
        } else {
          warnings.push({ root, message: `${file} has no front matter with name and description; skipped` });
        }
      }
      if (depth >= maxDepth) return;
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (e.isDirectory() && !e.name.startsWith(".") && e.name !== "node_modules") await walk(path.join(dir, e.name), depth + 1);
      }
    };
    await walk(root, 0);
  }
  return { skills: skills.sort((a, b) => a.name.localeCompare(b.name)), warnings };
}

export async function readSkill(file: string): Promise<Result<{ body: string; bytes: number }>> {
  if (path.basename(file) !== "SKILL.md") return err("invalid_params", "skills/read only reads SKILL.md files");
  try {
    const s = await stat(file);
    if (s.size > MAX_SKILL_BYTES) return err("too_large", `${file} is ${s.size} bytes; skills are limited to ${MAX_SKILL_BYTES}`);
    const text = await readFile(file, "utf8");
    return ok({ body: parseFrontMatter(text)?.body ?? text, bytes: s.size });
  } catch (e) {
    return err("not_found", `cannot read ${file} on the executor host: ${(e as Error).message}`);
  }
}

/**
 * Skills discovery on the executor's own filesystem: a skill is a folder with a SKILL.md whose
 * front matter names and describes it. The orchestrator never reads an executor's files itself,
 * so a remote executor's skills are the remote host's. Both reads are bounded: discovery reads
 * at most the first 16 KiB of each file (its front matter), and a body is read a slice at a time.
 */
import { open, readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { MethodErrors } from "../contracts/method.ts";
import {
  SKILL_BODY_MAX_BYTES,
  type Skill,
  type SkillBody,
  type SkillsListResult,
  type SkillsReadMethod,
} from "../contracts/skills.ts";
import { byCodeUnits } from "../util/compare.ts";
import { err, ok, type Result } from "../util/result.ts";
import { wholeCharsEnd } from "../util/utf8.ts";
import { parseFrontMatter, splitFrontMatter } from "./front-matter.ts";

/** Front matter must close within this many bytes from the start of the file. */
export const FRONT_MATTER_MAX_BYTES = 16 * 1024;

/** At most `max` bytes of `file` from byte `start`, cut back to a whole UTF-8 character. */
async function readSlice(
  file: string,
  start: number,
  max: number,
): Promise<{ text: string; bytes: number; size: number }> {
  const fh = await open(file, "r");
  try {
    const size = (await fh.stat()).size;
    const buf = Buffer.alloc(Math.max(0, Math.min(max, size - start)));
    const { bytesRead } = buf.length ? await fh.read(buf, 0, buf.length, start) : { bytesRead: 0 };
    const end = start + bytesRead < size ? wholeCharsEnd(buf.subarray(0, bytesRead)) : bytesRead;
    return { text: buf.subarray(0, end).toString("utf8"), bytes: end, size };
  } finally {
    await fh.close();
  }
}

type Warning = SkillsListResult["warnings"][number];

/** The skill a SKILL.md describes, or why it gives none. */
async function skillAt(file: string, root: string): Promise<Skill | Warning> {
  let head: Awaited<ReturnType<typeof readSlice>>;
  try {
    head = await readSlice(file, 0, FRONT_MATTER_MAX_BYTES);
  } catch (e) {
    return { root, path: file, reason: "unreadable", message: `${file} cannot be read: ${(e as Error).message}` };
  }
  const fm = await parseFrontMatter(head.text);
  if (!fm && head.text.startsWith("---") && head.size > FRONT_MATTER_MAX_BYTES) {
    return {
      root,
      path: file,
      reason: "too_large",
      message: `${file}: its front matter does not end within the first ${FRONT_MATTER_MAX_BYTES} bytes; skipped`,
    };
  }
  if (fm && "invalid" in fm) {
    const { line, message } = fm.invalid;
    return {
      root,
      path: file,
      reason: "bad_front_matter",
      message: `${file}:${line}: front matter is not valid YAML: ${message}; fix it (e.g. quote a value that holds ": "); skipped`,
    };
  }
  const name = fm?.fields.name?.trim();
  const description = fm?.fields.description?.trim();
  if (!fm || !name || !description) {
    return {
      root,
      path: file,
      reason: "bad_front_matter",
      message: `${file} has no front matter with name and description (---, name: ..., description: ..., ---); skipped`,
    };
  }
  const hidden = /^(true|yes)$/i.test(fm.fields.hidden?.trim() ?? "");
  return { name, description, path: file, root, ...(hidden ? { hidden } : {}) };
}

export async function discoverSkills(roots: string[], maxDepth = 3): Promise<SkillsListResult> {
  const skills: Skill[] = [];
  const warnings: Warning[] = [];
  for (const root of roots) {
    if (!path.isAbsolute(root)) {
      warnings.push({
        root,
        reason: "unavailable_root",
        message: "capability root must be an absolute path on the executor host",
      });
      continue;
    }
    try {
      const s = await stat(root);
      if (!s.isDirectory()) throw new Error("not a directory");
    } catch (e) {
      warnings.push({
        root,
        reason: "unavailable_root",
        message: `unavailable on the executor host: ${(e as Error).message}`,
      });
      continue;
    }
    const walk = async (dir: string, depth: number): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      if (entries.some((e) => e.isFile() && e.name === "SKILL.md")) {
        const found = await skillAt(path.join(dir, "SKILL.md"), root);
        if ("name" in found) skills.push(found);
        else warnings.push(found);
      }
      if (depth >= maxDepth) return;
      for (const e of entries.sort((a, b) => byCodeUnits(a.name, b.name))) {
        if (e.isDirectory() && !e.name.startsWith(".") && e.name !== "node_modules")
          await walk(path.join(dir, e.name), depth + 1);
      }
    };
    await walk(root, 0);
  }
  return { skills: skills.sort((a, b) => byCodeUnits(a.name, b.name)), warnings };
}

/** One slice of a skill's body (the text after its front matter), never more than `maxBytes`. */
export async function readSkill(
  file: string,
  offset = 0,
  maxBytes = SKILL_BODY_MAX_BYTES,
): Promise<Result<SkillBody, MethodErrors<typeof SkillsReadMethod>>> {
  if (path.basename(file) !== "SKILL.md") return err("invalid_params", "skills/read only reads SKILL.md files");
  try {
    const head = await readSlice(file, 0, FRONT_MATTER_MAX_BYTES);
    const fm = splitFrontMatter(head.text);
    const bodyStart = fm ? Buffer.byteLength(head.text.slice(0, head.text.length - fm.body.length)) : 0;
    const bodyBytes = head.size - bodyStart;
    const slice = await readSlice(file, bodyStart + Math.min(offset, bodyBytes), maxBytes);
    const end = Math.min(offset, bodyBytes) + slice.bytes;
    return ok({
      body: slice.text,
      bytes: head.size,
      body_bytes: bodyBytes,
      ...(end < bodyBytes ? { next_offset: end } : {}),
    });
  } catch (e) {
    return err("not_found", `cannot read ${file} on the executor host: ${(e as Error).message}`);
  }
}

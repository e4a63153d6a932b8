/**
 * Redacts a folder in place: file contents and file names. Phase 2 runs it before every baseline
 * commit, so neither the memory folder nor its git objects keep a secret that a consolidator (a
 * model can write anything) or a hand edit put there.
 */
import { mkdir, readdir, readFile, rename, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { REDACTED, redactSecrets } from "../util/redact.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

async function walk(root: string, rel: string, skip: ReadonlySet<string>): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (skip.has(p)) continue;
    if (e.isDirectory()) out.push(...(await walk(root, p, skip)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Text is redacted as UTF-8; anything else byte for byte as latin1, which maps each byte to one char. */
function redactBytes(buf: Uint8Array): Uint8Array | undefined {
  let text: string;
  let encoding: "utf8" | "latin1" = "utf8";
  try {
    text = utf8.decode(buf);
  } catch {
    text = Buffer.from(buf).toString("latin1");
    encoding = "latin1";
  }
  const red = redactSecrets(text);
  return red === text ? undefined : Buffer.from(red, encoding);
}

/** Each path segment redacted; the marker's brackets become a plain word in file names. */
export function safeRelativePath(rel: string): string {
  return rel
    .split("/")
    .map((seg) => redactSecrets(seg).split(REDACTED).join("REDACTED"))
    .join("/");
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

async function freePath(root: string, rel: string): Promise<string> {
  if (!(await exists(path.join(root, rel)))) return rel;
  const ext = path.posix.extname(rel);
  for (let i = 2; ; i++) {
    const cand = `${rel.slice(0, rel.length - ext.length)}-${i}${ext}`;
    if (!(await exists(path.join(root, cand)))) return cand;
  }
}

/** Removes the now-empty directories between `rel`'s parent and the root. */
async function pruneEmptyParents(root: string, rel: string): Promise<void> {
  for (let dir = path.posix.dirname(rel); dir !== "." && dir !== ""; dir = path.posix.dirname(dir)) {
    try {
      await rmdir(path.join(root, dir));
    } catch {
      return;
    }
  }
}

/** Redacts every file under `root` except the `skip` paths (relative, `/`-separated); returns the files it changed or renamed. */
export async function redactFolder(root: string, skip: readonly string[] = [".git"]): Promise<string[]> {
  const changed: string[] = [];
  for (const rel of await walk(root, "", new Set(skip))) {
    let target = rel;
    const safe = safeRelativePath(rel);
    if (safe !== rel) {
      target = await freePath(root, safe);
      await mkdir(path.dirname(path.join(root, target)), { recursive: true });
      await rename(path.join(root, rel), path.join(root, target));
      await pruneEmptyParents(root, rel);
    }
    const red = redactBytes(await readFile(path.join(root, target)));
    if (red) await writeFile(path.join(root, target), red);
    if (red || target !== rel) changed.push(target);
  }
  return changed;
}

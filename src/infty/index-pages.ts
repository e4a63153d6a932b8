/**
 * An index kept as pages (formats in index-format.ts): a manifest listing page files in order,
 * each holding a few hundred entries. A handoff writes the pages holding what changed, and the
 * manifest when a page was added, removed or changed its count or range; an index of 10,000
 * artifacts costs a handoff what one of 100 does. Sorted pages (artifacts, by path) split in
 * two past PAGE_MAX; appended pages (claims, in the order first sent) fill up to PAGE_TARGET,
 * then a new one starts.
 */
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { byCodeUnits } from "../util/compare.ts";
import { makeDirIn, writeFileAtomic } from "./durable.ts";
import { type IndexManifest, IndexManifestSchema } from "./index-format.ts";
import { count } from "./work-count.ts";

/** Entries a new page starts with (an appended page fills up to it, a split leaves two of it). */
export const PAGE_TARGET = 256;
/** Entries past which a sorted page is split. */
export const PAGE_MAX = 2 * PAGE_TARGET;

interface Page {
  n: number;
  keys: string[];
  /** What its file holds (as last written or read); undefined: not written yet. */
  text?: string;
}

export interface PagedIndexOptions<E> {
  /** The manifest, relative to the run store ("index/artifacts.json"). */
  manifest: string;
  /** The pages' folder, relative to the run store ("index/artifacts"). */
  dir: string;
  /** The entries' field in a page ("files", "claims"). */
  listKey: string;
  order: "sorted" | "appended";
  keyOf: (entry: E) => string;
  /** A page file's entries, or undefined when it is not one. */
  parsePage: (json: unknown) => E[] | undefined;
}

const pageName = (n: number) => `${String(n).padStart(4, "0")}.json`;

export class PagedIndex<E> {
  private pages: Page[] = [];
  private nextPage = 1;
  private readonly pageOf = new Map<string, Page>();
  private readonly dirty = new Set<Page>();
  private readonly dropped: Page[] = [];
  /** The manifest's text without its time, as last written or read. */
  private manifestPart: string | undefined;
  /** The pages on disk were not all understood: remove the files no page is. */
  private sweep = false;

  private constructor(
    private readonly runDir: string,
    private readonly o: PagedIndexOptions<E>,
  ) {}

  /** The index as its files hold it, with the entries read; an index that does not read back starts empty. */
  static async load<E>(
    runDir: string,
    o: PagedIndexOptions<E>,
  ): Promise<{ index: PagedIndex<E>; entries: E[]; manifest: unknown }> {
    const index = new PagedIndex(runDir, o);
    const raw = await readFile(path.join(runDir, o.manifest), "utf8")
      .then(
        (t) => JSON.parse(t) as unknown,
        () => undefined,
      )
      .catch(() => undefined);
    const parsed = IndexManifestSchema.safeParse(raw);
    if (!parsed.success) {
      index.sweep = true;
      return { index, entries: [], manifest: raw };
    }
    const entries: E[] = [];
    for (const ref of parsed.data.pages) {
      const n = Number(/^(\d+)\.json$/.exec(path.posix.basename(ref.file))?.[1]);
      const text =
        path.posix.dirname(ref.file) === o.dir
          ? await readFile(path.join(runDir, ref.file), "utf8").catch(() => undefined)
          : undefined;
      const list = text === undefined ? undefined : o.parsePage(parseOrUndefined(text));
      if (!Number.isInteger(n) || !list?.length) {
        index.sweep = true;
        continue;
      }
      entries.push(...list);
      index.pages.push({ n, keys: list.map(o.keyOf), text });
    }
    index.nextPage = Math.max(parsed.data.next_page, ...index.pages.map((p) => p.n + 1));
    if (!index.consistent()) {
      index.pages = [];
      index.sweep = true;
      return { index, entries, manifest: raw };
    }
    for (const p of index.pages) for (const k of p.keys) index.pageOf.set(k, p);
    index.manifestPart = manifestPart(index.manifestOf());
    return { index, entries, manifest: raw };
  }

  /** No key twice and, when sorted, every page in order and after the one before. */
  private consistent(): boolean {
    const seen = new Set<string>();
    let last: string | undefined;
    for (const p of this.pages) {
      for (const k of p.keys) {
        if (seen.has(k)) return false;
        seen.add(k);
        if (this.o.order === "sorted" && last !== undefined && byCodeUnits(last, k) >= 0) return false;
        last = k;
      }
    }
    return true;
  }

  has(key: string): boolean {
    return this.pageOf.has(key);
  }

  keys(): string[] {
    return this.pages.flatMap((p) => p.keys);
  }

  /** An entry added or changed: its page is written at the next write. */
  put(key: string): void {
    const at = this.pageOf.get(key);
    if (at) {
      this.dirty.add(at);
      return;
    }
    const page = this.o.order === "sorted" ? this.insertSorted(key) : this.append(key);
    this.pageOf.set(key, page);
    this.dirty.add(page);
    if (page.keys.length > PAGE_MAX) this.split(page);
  }

  /** Every entry changed (a full look): every page is built again, and written where it differs. */
  putAll(): void {
    for (const p of this.pages) this.dirty.add(p);
  }

  remove(key: string): void {
    const page = this.pageOf.get(key);
    if (!page) return;
    this.pageOf.delete(key);
    const i = page.keys.indexOf(key);
    page.keys.splice(i, 1);
    this.dirty.add(page);
    if (page.keys.length > 0) return;
    this.pages.splice(this.pages.indexOf(page), 1);
    this.dirty.delete(page);
    this.dropped.push(page);
  }

  private newPage(at: number): Page {
    const page: Page = { n: this.nextPage++, keys: [] };
    this.pages.splice(at, 0, page);
    return page;
  }

  private append(key: string): Page {
    const last = this.pages.at(-1);
    const page = last && last.keys.length < PAGE_TARGET ? last : this.newPage(this.pages.length);
    page.keys.push(key);
    return page;
  }

  /** Into the last page whose first key is not after `key` (the first page if none is). */
  private insertSorted(key: string): Page {
    if (this.pages.length === 0) this.newPage(0);
    let lo = 0;
    let hi = this.pages.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (byCodeUnits(this.pages[mid]!.keys[0]!, key) <= 0) lo = mid;
      else hi = mid - 1;
    }
    const page = this.pages[lo]!;
    page.keys.splice(lowerBound(page.keys, key), 0, key);
    return page;
  }

  private split(page: Page): void {
    const next = this.newPage(this.pages.indexOf(page) + 1);
    next.keys = page.keys.splice(PAGE_TARGET);
    for (const k of next.keys) this.pageOf.set(k, next);
    this.dirty.add(next);
  }

  private manifestOf(): Omit<IndexManifest, "run_id" | "generated_at"> {
    const pages = this.pages.map((p) => ({
      file: `${this.o.dir}/${pageName(p.n)}`,
      entries: p.keys.length,
      first: p.keys[0]!,
      last: p.keys.at(-1)!,
    }));
    return { version: 2, entries: this.pageOf.size, next_page: this.nextPage, pages };
  }

  /**
   * Writes the pages that changed (each built from `entryOf`) and, if it changed, the manifest;
   * removes the pages left empty. Derived data, made again at every handoff: whole or absent
   * after a crash is enough, no fsync. The files written or removed, relative to the run store.
   */
  async write(entryOf: (key: string) => E, head: { run_id: string; generated_at: string }): Promise<string[]> {
    const changed: string[] = [];
    // index/ exists from the run's creation.
    await makeDirIn(path.join(this.runDir, this.o.dir));
    for (const page of this.pages.filter((p) => this.dirty.has(p))) {
      const text =
        JSON.stringify({ version: 2, run_id: head.run_id, [this.o.listKey]: page.keys.map(entryOf) }, null, 2) + "\n";
      if (text === page.text) continue;
      count("written");
      const rel = `${this.o.dir}/${pageName(page.n)}`;
      await writeFileAtomic(path.join(this.runDir, rel), text, { sync: false });
      page.text = text;
      changed.push(rel);
    }
    this.dirty.clear();
    for (const page of this.dropped.splice(0)) changed.push(await this.removeFile(pageName(page.n)));
    if (this.sweep) changed.push(...(await this.sweepFiles()));
    const manifest = this.manifestOf();
    const part = manifestPart(manifest);
    if (part !== this.manifestPart) {
      count("written");
      const { version, ...rest } = manifest;
      await writeFileAtomic(
        path.join(this.runDir, this.o.manifest),
        JSON.stringify({ version, run_id: head.run_id, generated_at: head.generated_at, ...rest }, null, 2) + "\n",
        { sync: false },
      );
      this.manifestPart = part;
      changed.push(this.o.manifest);
    }
    return changed;
  }

  private async removeFile(name: string): Promise<string> {
    count("written");
    await rm(path.join(this.runDir, this.o.dir, name), { force: true });
    return `${this.o.dir}/${name}`;
  }

  /** Files in the pages' folder that no page is (left by an index that did not read back). */
  private async sweepFiles(): Promise<string[]> {
    this.sweep = false;
    const own = new Set(this.pages.map((p) => pageName(p.n)));
    count("listed");
    const names = await readdir(path.join(this.runDir, this.o.dir)).catch(() => []);
    const out: string[] = [];
    for (const name of names) if (!own.has(name)) out.push(await this.removeFile(name));
    return out;
  }
}

function manifestPart(m: Omit<IndexManifest, "run_id" | "generated_at">): string {
  return JSON.stringify(m);
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The first index in sorted `list` whose item is not before `key`. */
export function lowerBound(list: readonly string[], key: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byCodeUnits(list[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

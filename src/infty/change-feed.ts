/**
 * Which paths of a run store's folders changed since the last handoff, so that the index and
 * the checkpoint look at those and not at every file of a run that has thousands. A recursive
 * fs.watch per folder (inotify) collects them; any doubt means "look at everything": the first
 * take, an error or a folder replaced under its watcher, a runtime whose recursive watcher is
 * not trusted (Node's and Deno's lose events, measured; Bun's, which the binary runs, does not),
 * and every FULL_EVERY-th take, as a safety net against anything a watcher missed.
 * A take waits for its watchers to catch up: it writes a marker file into each folder and waits
 * for the marker's own event (the kernel queues events in order, so every change made before the
 * take has been reported by then); a marker not seen in BARRIER_MS means "look at everything".
 */
import { type FSWatcher, watch } from "node:fs";
import { readdir, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";

/** Everything, or these paths (relative to the run store, e.g. `artifacts/a/b.txt`; a folder means all under it). */
export type Changes = { all: true } | { all: false; paths: ReadonlySet<string> };

export const ALL: Changes = { all: true };

/** Takes between two full looks when the watchers report nothing wrong. */
export const FULL_EVERY = 200;

/** How long a take waits for a marker's event before it looks at everything instead. */
export const BARRIER_MS = 5000;

/** The name of a take's marker files: never a change of the run's own. */
const MARKER = ".relay-change-feed-";

export class ChangeFeed {
  private paths = new Set<string>();
  private doubt = true;
  private takes = 0;
  private readonly watchers: FSWatcher[] = [];
  /** Each folder's inode when its watcher started: another inode means the folder was replaced. */
  private readonly inodes = new Map<string, number>();
  /** Markers written by a take, by their path in the store, and what their event resolves. */
  private readonly markers = new Map<string, () => void>();
  private markerSeq = 0;

  private constructor(
    private readonly root: string,
    private readonly dirs: readonly string[],
  ) {}

  /** Watches `dirs` of `root`; without a trusted recursive watcher every take is ALL. */
  static async start(root: string, dirs: readonly string[]): Promise<ChangeFeed> {
    const feed = new ChangeFeed(root, dirs);
    await feed.removeStaleMarkers();
    if (process.versions.bun) await feed.watchAll();
    return feed;
  }

  /** Markers a driver killed mid-take left behind (each folder's top level is listed once per start). */
  private async removeStaleMarkers(): Promise<void> {
    for (const d of this.dirs) {
      const names = await readdir(path.join(this.root, d)).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.startsWith(MARKER)))
        await rm(path.join(this.root, d, name), { force: true }).catch(() => undefined);
    }
  }

  private async watchAll(): Promise<void> {
    for (const d of this.dirs) {
      const abs = path.join(this.root, d);
      try {
        const w = watch(abs, { recursive: true }, (_event, name) => {
          if (name === null || name === undefined) return void (this.doubt = true);
          const rel = `${d}/${String(name).split(path.sep).join("/")}`;
          if (String(name).startsWith(MARKER)) this.markers.get(rel)?.();
          else this.paths.add(rel);
        });
        w.on("error", () => (this.doubt = true));
        this.watchers.push(w);
        this.inodes.set(d, (await stat(abs)).ino);
      } catch {
        this.doubt = true;
      }
    }
  }

  /** What changed since the last take (every change made before it is reported first). */
  async take(): Promise<Changes> {
    if (this.watchers.length > 0) await Promise.all(this.dirs.map((d) => this.catchUp(d)));
    const replaced = await this.replacedFolder();
    const full = this.doubt || replaced || this.watchers.length < this.dirs.length || ++this.takes % FULL_EVERY === 0;
    const paths = this.paths;
    this.paths = new Set();
    this.doubt = false;
    if (replaced) await this.restart();
    return full ? ALL : { all: false, paths };
  }

  /** Writes a marker into folder `d` and waits for its event; one not seen in time (or not written) is a doubt. */
  private async catchUp(d: string): Promise<void> {
    const name = `${MARKER}${process.pid}-${++this.markerSeq}`;
    const rel = `${d}/${name}`;
    const file = path.join(this.root, d, name);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const seen = new Promise<boolean>((resolve) => {
      this.markers.set(rel, () => resolve(true));
      timer = setTimeout(() => resolve(false), BARRIER_MS);
    });
    const written = await writeFile(file, "").then(
      () => true,
      () => false,
    );
    if (!written || !(await seen)) this.doubt = true;
    clearTimeout(timer);
    this.markers.delete(rel);
    await rm(file, { force: true }).catch(() => undefined);
  }

  /** Whether a watched folder is gone or another one stands in its place (its watcher then sees nothing). */
  private async replacedFolder(): Promise<boolean> {
    for (const [d, ino] of this.inodes) {
      const now = await stat(path.join(this.root, d)).catch(() => undefined);
      if (now?.ino !== ino) return true;
    }
    return false;
  }

  private async restart(): Promise<void> {
    this.close();
    this.inodes.clear();
    await this.watchAll();
  }

  close(): void {
    for (const w of this.watchers.splice(0)) w.close();
  }
}

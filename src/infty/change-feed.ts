/**
 * Which paths of a run store's folders changed since the last handoff, so that the index and
 * the checkpoint look at those and not at every file of a run that has thousands. A recursive
 * fs.watch per folder (inotify) collects them; any doubt means "look at everything": the first
 * take, an error or a folder replaced under its watcher, a runtime whose recursive watcher is
 * not trusted (Node's and Deno's lose events, measured; Bun's, which the binary runs, does not),
 * and every FULL_EVERY-th take, as a safety net against anything a watcher missed.
 */
import { type FSWatcher, watch } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";

/** Everything, or these paths (relative to the run store, e.g. `artifacts/a/b.txt`; a folder means all under it). */
export type Changes = { all: true } | { all: false; paths: ReadonlySet<string> };

export const ALL: Changes = { all: true };

/** Takes between two full looks when the watchers report nothing wrong. */
export const FULL_EVERY = 200;

const settle = () => new Promise<void>((r) => setImmediate(r));

export class ChangeFeed {
  private paths = new Set<string>();
  private doubt = true;
  private takes = 0;
  private readonly watchers: FSWatcher[] = [];
  /** Each folder's inode when its watcher started: another inode means the folder was replaced. */
  private readonly inodes = new Map<string, number>();

  private constructor(
    private readonly root: string,
    private readonly dirs: readonly string[],
  ) {}

  /** Watches `dirs` of `root`; without a trusted recursive watcher every take is ALL. */
  static async start(root: string, dirs: readonly string[]): Promise<ChangeFeed> {
    const feed = new ChangeFeed(root, dirs);
    if (process.versions.bun) await feed.watchAll();
    return feed;
  }

  private async watchAll(): Promise<void> {
    for (const d of this.dirs) {
      const abs = path.join(this.root, d);
      try {
        const w = watch(abs, { recursive: true }, (_event, name) => {
          if (name === null || name === undefined) this.doubt = true;
          else this.paths.add(`${d}/${String(name).split(path.sep).join("/")}`);
        });
        w.on("error", () => (this.doubt = true));
        this.watchers.push(w);
        this.inodes.set(d, (await stat(abs)).ino);
      } catch {
        this.doubt = true;
      }
    }
  }

  /** What changed since the last take (events already queued are let in first). */
  async take(): Promise<Changes> {
    await settle();
    await settle();
    const replaced = await this.replacedFolder();
    const full = this.doubt || replaced || this.watchers.length < this.dirs.length || ++this.takes % FULL_EVERY === 0;
    const paths = this.paths;
    this.paths = new Set();
    this.doubt = false;
    if (replaced) await this.restart();
    return full ? ALL : { all: false, paths };
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

/**
 * One run as the server follows it: the index of its events.jsonl, its roles' budget fold, and,
 * while a page listens, a watch on the run's folder (fs.watch, and a slow stat as a fallback for
 * file systems that do not report changes) that tells listeners about new lines and a changed
 * run.json. Nothing is polled in a busy loop and nothing is written.
 */
import { type FSWatcher, watch } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { EventLogIndex } from "./event-index.ts";
import { RoleBudgetFold } from "./role-budget.ts";

/** How often the fallback looks at the files when fs.watch says nothing. */
export const STAT_FALLBACK_MS = 2000;

export interface RunListener {
  /** New lines: the count of lines indexed now. */
  grew(count: number): void;
  /** run.json was replaced. */
  changed(): void;
}

export class RunWatch {
  readonly index: EventLogIndex;
  readonly budget: RoleBudgetFold;
  private readonly listeners = new Set<RunListener>();
  private watcher: FSWatcher | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private runJsonStamp = "";
  private looking = false;
  private again = false;

  constructor(readonly dir: string) {
    this.index = new EventLogIndex(path.join(dir, "events.jsonl"));
    this.budget = new RoleBudgetFold(this.index);
    this.index.onGrow((count) => {
      for (const l of this.listeners) l.grew(count);
    });
  }

  /** Starts following the run for `l` (the first listener starts the watch); the returned function stops. */
  listen(l: RunListener): () => void {
    this.listeners.add(l);
    if (this.listeners.size === 1) this.start();
    return () => {
      this.listeners.delete(l);
      if (this.listeners.size === 0) this.stop();
    };
  }

  private start(): void {
    void this.stamp().then((s) => (this.runJsonStamp = s));
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => this.look());
      this.watcher.on("error", () => this.watcher?.close());
    } catch {
      // the stat fallback below still follows the run
    }
    this.timer = setInterval(() => this.look(), STAT_FALLBACK_MS);
    this.timer.unref?.();
  }

  private stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async stamp(): Promise<string> {
    const s = await stat(path.join(this.dir, "run.json")).catch(() => undefined);
    return s ? `${s.mtimeMs}:${s.size}:${s.ino}` : "";
  }

  /** One look at a time; a change during a look brings one more. */
  private look(): void {
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = true;
    void (async () => {
      do {
        this.again = false;
        await this.index.refresh().catch(() => 0);
        const s = await this.stamp();
        if (s !== this.runJsonStamp) {
          this.runJsonStamp = s;
          for (const l of this.listeners) l.changed();
        }
      } while (this.again);
      this.looking = false;
    })();
  }

  close(): void {
    this.listeners.clear();
    this.stop();
  }
}

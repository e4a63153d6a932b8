/**
 * The run's events as a virtualised list: rows of one fixed height, only those in view (and a
 * few around) in the DOM, fetched from the server a page at a time as they scroll into view.
 * 100 000 events cost a tall empty spacer and a few dozen rows. New events (SSE) extend the
 * list; while "follow" is on it stays scrolled to the end.
 */
import type { IndexedEvent } from "../api-schemas.ts";
import { describe } from "./describe.ts";
import { clear, h } from "./dom.ts";

export const ROW_HEIGHT = 24;
export const PAGE_SIZE = 200;
const OVERSCAN = 10;

export class Timeline {
  readonly el: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly rows = new Map<number, HTMLElement>();
  private readonly cache = new Map<number, IndexedEvent>();
  private readonly loading = new Set<number>();
  private total = 0;
  private scheduled = false;
  follow = true;

  constructor(
    private readonly fetchPage: (from: number, limit: number) => Promise<IndexedEvent[]>,
    private readonly onPick: (e: IndexedEvent) => void,
  ) {
    this.spacer = h("div", { class: "tl-spacer" });
    this.el = h("div", { class: "timeline", data: { testid: "timeline" } }, this.spacer);
    this.el.addEventListener("scroll", () => {
      const atEnd = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - ROW_HEIGHT;
      this.follow = atEnd;
      this.schedule();
    });
    new ResizeObserver(() => this.schedule()).observe(this.el);
  }

  get count(): number {
    return this.total;
  }

  setTotal(n: number): void {
    if (n <= this.total) return;
    this.total = n;
    this.spacer.style.height = `${n * ROW_HEIGHT}px`;
    if (this.follow) this.el.scrollTop = this.el.scrollHeight;
    this.schedule();
  }

  /** An event that arrived live. */
  add(e: IndexedEvent): void {
    this.cache.set(e.n, e);
    this.rows.get(e.n)?.remove();
    this.rows.delete(e.n);
    if (e.n + 1 > this.total) this.setTotal(e.n + 1);
    else this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.render();
    });
  }

  private render(): void {
    const first = Math.max(0, Math.floor(this.el.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.total, Math.ceil((this.el.scrollTop + this.el.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    for (const [n, row] of this.rows) {
      if (n < first || n >= last) {
        row.remove();
        this.rows.delete(n);
      }
    }
    for (let n = first; n < last; n++) {
      const e = this.cache.get(n);
      if (!e) this.load(n);
      if (this.rows.has(n) && (this.rows.get(n)!.dataset.ready === "1" || !e)) continue;
      this.rows.get(n)?.remove();
      const row = e ? this.row(e) : h("div", { class: "row loading" }, "…");
      row.style.top = `${n * ROW_HEIGHT}px`;
      this.rows.set(n, row);
      this.el.appendChild(row);
    }
  }

  private row(e: IndexedEvent): HTMLElement {
    const d = describe(e.event);
    const at = typeof e.event.at === "string" ? e.event.at.slice(11, 19) : "";
    return h(
      "div",
      {
        class: `row ${d.tone}`,
        data: { n: String(e.n), type: String(e.event.type), ready: "1" },
        on: { click: () => this.onPick(e) },
        title: d.text.slice(0, 500),
      },
      h("span", { class: "n" }, String(e.n)),
      h("span", { class: "at" }, at),
      h("span", { class: "who" }, d.who),
      h("span", { class: "kind" }, d.kind),
      h("span", { class: "text" }, d.text),
    );
  }

  private load(n: number): void {
    const page = Math.floor(n / PAGE_SIZE);
    if (this.loading.has(page)) return;
    this.loading.add(page);
    void this.fetchPage(page * PAGE_SIZE, PAGE_SIZE).then(
      (events) => {
        for (const e of events) this.cache.set(e.n, e);
        this.schedule();
      },
      () => this.loading.delete(page),
    );
  }

  clear(): void {
    clear(this.el);
    this.el.appendChild(this.spacer);
    this.rows.clear();
  }
}

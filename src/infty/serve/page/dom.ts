/**
 * Building the page's DOM: every string becomes a text node (never markup), an href only when it
 * is this page's own (`#…`) or this server's (`/…`). The one place markup is parsed is the
 * Markdown viewer, whose renderer escapes everything first (markdown.ts).
 */
import { driverMark } from "./driver-mark.ts";

type Child = Node | string | number | null | undefined | false;

export interface Attrs {
  class?: string;
  title?: string;
  href?: string;
  id?: string;
  data?: Record<string, string>;
  on?: Partial<Record<"click" | "input" | "change" | "submit" | "scroll", (e: Event) => void>>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs.class) el.className = attrs.class;
  if (attrs.title) el.title = attrs.title;
  if (attrs.id) el.id = attrs.id;
  if (
    attrs.href !== undefined &&
    (attrs.href.startsWith("#") || (attrs.href.startsWith("/") && !attrs.href.startsWith("//")))
  )
    el.setAttribute("href", attrs.href);
  for (const [k, v] of Object.entries(attrs.data ?? {})) el.dataset[k] = v;
  for (const [k, fn] of Object.entries(attrs.on ?? {})) if (fn) el.addEventListener(k, fn);
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export function formatMs(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)}h`;
  return `${(s / 86_400).toFixed(1)}d`;
}

export function formatTokens(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 10_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** The mark as a badge: "● live", or "⚠ stale" with the sentence (why, and how to resume) as its title. */
export function driverBadge(status: string, live: boolean, stale: string | undefined): HTMLElement | null {
  const mark = driverMark(status, live, stale);
  if (mark === "stale") return h("span", { class: "stale", title: stale, data: { testid: "stale" } }, " ⚠ stale");
  return mark === "live" ? h("span", { class: "live", title: "a process drives this run now" }, " ● live") : null;
}

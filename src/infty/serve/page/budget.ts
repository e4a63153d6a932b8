/**
 * The budget panel: the run's turns, wall time and tokens against their limits, then each role's
 * tokens and busy time, as bars in a small inline SVG (built with DOM calls, text as text).
 */
import type { Budget } from "../api-schemas.ts";
import { formatMs, formatTokens } from "./dom.ts";

export interface Bar {
  label: string;
  /** 0..1 of the limit (or of the largest, without a limit). */
  fraction: number;
  /** Whether `fraction` is of a real limit (a bar near one is then a warning). */
  limited: boolean;
  value: string;
  kind: "turns" | "wall" | "tokens" | "busy";
}

const frac = (v: number, of: number) => (of > 0 ? Math.min(1, v / of) : 0);

export function budgetBars(b: Budget): Bar[] {
  const bars: Bar[] = [
    {
      label: "turns",
      fraction: frac(b.turns, b.max_turns),
      limited: true,
      value: `${b.turns} / ${b.max_turns}`,
      kind: "turns",
    },
    {
      label: "wall",
      fraction: frac(b.wall_ms_used, b.max_wall_ms),
      limited: true,
      value: `${formatMs(b.wall_ms_used)} / ${formatMs(b.max_wall_ms)}`,
      kind: "wall",
    },
    {
      label: "tokens",
      fraction: b.max_tokens ? frac(b.tokens_used, b.max_tokens) : 0,
      limited: b.max_tokens !== null,
      value: b.max_tokens
        ? `${formatTokens(b.tokens_used)} / ${formatTokens(b.max_tokens)}`
        : `${formatTokens(b.tokens_used)} (no limit)`,
      kind: "tokens",
    },
  ];
  const topTokens = Math.max(1, ...b.roles.map((r) => r.tokens));
  for (const r of b.roles) {
    bars.push({
      label: `${r.role} tokens`,
      fraction: frac(r.tokens, b.max_tokens ?? topTokens),
      limited: b.max_tokens !== null,
      value: formatTokens(r.tokens),
      kind: "tokens",
    });
    bars.push({
      label: `${r.role} time`,
      fraction: frac(r.busy_ms, b.max_wall_ms),
      limited: true,
      value: `${formatMs(r.busy_ms)} in ${r.turns} turn${r.turns === 1 ? "" : "s"}`,
      kind: "busy",
    });
  }
  return bars;
}

const SVG = "http://www.w3.org/2000/svg";
const ROW = 20;
const WIDTH = 360;
const LABEL = 130;
const BAR = 120;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

export function budgetChart(b: Budget): SVGSVGElement {
  const bars = budgetBars(b);
  const root = svg("svg", {
    width: WIDTH,
    height: bars.length * ROW + 4,
    viewBox: `0 0 ${WIDTH} ${bars.length * ROW + 4}`,
    role: "img",
    "aria-label": "budget",
    class: "budget-chart",
  });
  bars.forEach((bar, i) => {
    const y = i * ROW + 2;
    root.appendChild(svg("text", { x: 0, y: y + 13, class: "lbl" }, bar.label));
    root.appendChild(svg("rect", { x: LABEL, y: y + 3, width: BAR, height: 12, class: "track" }));
    root.appendChild(
      svg("rect", {
        x: LABEL,
        y: y + 3,
        width: Math.max(bar.fraction > 0 ? 1 : 0, Math.round(bar.fraction * BAR)),
        height: 12,
        class: `fill ${bar.kind}${bar.limited && bar.fraction >= 0.9 ? " high" : ""}`,
      }),
    );
    root.appendChild(svg("text", { x: LABEL + BAR + 6, y: y + 13, class: "val" }, bar.value));
  });
  return root;
}

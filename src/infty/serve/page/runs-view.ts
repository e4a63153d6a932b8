/** The runs list: one row per run, newest first; refreshed while it is shown. */
import type { RunSummary } from "../api-schemas.ts";
import { api } from "./api.ts";
import { clear, driverBadge, formatTime, formatTokens, h } from "./dom.ts";
import { fleetPanel } from "./fleet-view.ts";

const REFRESH_MS = 5000;

function row(r: RunSummary): HTMLElement {
  const href = `#/run/${encodeURIComponent(r.id)}`;
  return h(
    "tr",
    { data: { run: r.id } },
    h("td", {}, h("a", { href, class: "run-link" }, r.id)),
    h("td", { class: "objective", title: r.objective }, r.objective.split("\n")[0]!.slice(0, 140)),
    h("td", {}, h("span", { class: `status ${r.status}` }, r.status), driverBadge(r.status, r.live, r.stale)),
    h("td", { class: "roles" }, ...r.roles.map((x) => h("div", {}, h("b", {}, x.role), " ", x.model))),
    h("td", {}, formatTime(r.created_at)),
    h("td", {}, formatTime(r.updated_at)),
    h("td", { class: "num" }, formatTokens(r.tokens_used), r.max_tokens ? ` / ${formatTokens(r.max_tokens)}` : ""),
    h("td", {}, r.deliverable ? "yes" : "no"),
  );
}

export function runsView(root: HTMLElement): () => void {
  const body = h("tbody");
  const note = h("p", { class: "note" });
  const table = h(
    "table",
    { class: "runs", data: { testid: "runs" } },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["run", "objective", "state", "roles and models", "started", "updated", "tokens", "deliverable"].map((t) =>
          h("th", {}, t),
        ),
      ),
    ),
    body,
  );
  const fleet = h("section", { data: { testid: "fleet" } });
  clear(root);
  root.append(h("h1", {}, "Runs"), note, table, fleet);
  let stopped = false;
  const load = async () => {
    try {
      const [list, view] = await Promise.all([api.runs(), api.fleet()]);
      if (stopped) return;
      if (view) fleet.replaceChildren(...fleetPanel(view));
      clear(body);
      for (const r of list.runs) body.appendChild(row(r));
      note.textContent = list.runs.length
        ? list.warnings.join(" ")
        : `No runs yet. Start one with: relay infty run "objective". ${list.warnings.join(" ")}`;
    } catch (e) {
      note.textContent = (e as Error).message;
    }
  };
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

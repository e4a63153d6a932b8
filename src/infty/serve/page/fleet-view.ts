/** The fleet panel of the runs list (relay infty serve --db): the fleet's workers and runs. */
import type { FleetRun, FleetView, FleetWorker } from "../../fleet/view-format.ts";
import { h } from "./dom.ts";

function table(testid: string, heads: string[], rows: HTMLElement[]): HTMLElement {
  return h(
    "table",
    { class: "runs", data: { testid } },
    h("thead", {}, h("tr", {}, ...heads.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...rows),
  );
}

function workerRow(w: FleetWorker): HTMLElement {
  return h(
    "tr",
    { data: { worker: w.name } },
    h("td", {}, w.name),
    h("td", {}, w.host),
    h("td", { class: "num" }, w.pid),
    h("td", { class: "num" }, `${w.runs}/${w.max_runs}`),
    h("td", {}, w.stopped ? "stopped" : `${w.heartbeat_age_s} s ago`),
  );
}

function runRow(r: FleetRun): HTMLElement {
  const lease =
    r.lease && !r.lease.released ? `epoch ${r.lease.epoch}, ${r.lease.holder}, ${r.lease.heartbeat_age_s} s` : "-";
  return h(
    "tr",
    { data: { fleetRun: r.id } },
    h("td", {}, h("a", { href: `#/run/${encodeURIComponent(r.id)}`, class: "run-link" }, r.id)),
    h("td", {}, h("span", { class: `status ${r.state}` }, r.state)),
    h("td", {}, r.worker ?? "-"),
    h("td", {}, lease),
    h("td", {}, r.submitter),
    h("td", { class: "objective", title: r.objective }, r.objective.split("\n")[0]!.slice(0, 140)),
    h("td", { class: "objective" }, r.reason ?? ""),
  );
}

/** The panel's elements for `view`. */
export function fleetPanel(view: FleetView): HTMLElement[] {
  return [
    h("h2", {}, "Fleet"),
    h(
      "p",
      { class: "note" },
      `${view.workers.filter((w) => !w.stopped).length} worker(s) running; database ${view.location}`,
    ),
    table("fleet-workers", ["worker", "host", "pid", "runs", "heartbeat"], view.workers.map(workerRow)),
    table("fleet-runs", ["run", "state", "worker", "lease", "submitter", "objective", "why"], view.runs.map(runRow)),
  ];
}

/**
 * One run: its state, the timeline of its log (live over SSE), the budget chart, checkpoints,
 * files with the deliverable's README rendered, the picked event in full, and (with
 * --allow-actions) stop, resume and a note to the Director.
 */
import type { IndexedEvent, RunDetail } from "../api-schemas.ts";
import { api } from "./api.ts";
import { budgetChart } from "./budget.ts";
import { describe } from "./describe.ts";
import { append, clear, driverBadge, formatTime, h } from "./dom.ts";
import { fileList, showFile } from "./files-view.ts";
import { Timeline } from "./timeline.ts";

const REFETCH_MS = 1000;

export function runView(root: HTMLElement, id: string, setConnection: (s: string) => void): () => void {
  const { head, budget, actions, checkpoints, files, viewer, detail } = runPanels();
  const timeline = new Timeline(
    async (from, limit) => (await api.events(id, from, limit)).events,
    (e) => showEvent(detail, e),
  );
  const follow = h("input", { on: { change: () => (timeline.follow = follow.checked) } });
  follow.type = "checkbox";
  follow.checked = true;
  clear(root);
  root.append(
    h("p", {}, h("a", { href: "#/" }, "← all runs")),
    head,
    h(
      "div",
      { class: "run-grid" },
      h(
        "div",
        { class: "left" },
        h("div", { class: "tl-head" }, h("h2", {}, "Timeline"), h("label", {}, follow, " follow")),
        timeline.el,
        detail,
      ),
      h("div", { class: "right" }, budget, actions, viewer, files, checkpoints),
    ),
  );

  let stopped = false;
  let stream: EventSource | undefined;
  let refetch: ReturnType<typeof setTimeout> | undefined;
  let shownDeliverable = false;

  const refresh = async () => {
    const d = await api.run(id);
    if (stopped) return;
    renderHead(head, d);
    clear(budget);
    budget.append(h("h2", {}, "Budget"), budgetChart(d.budget));
    renderActions(actions, d, () => void refresh());
    timeline.setTotal(d.events);
    const hasReadme = await renderFiles(files, viewer, id);
    if (!shownDeliverable && hasReadme) {
      shownDeliverable = true;
      void showFile(viewer, id, "deliverable/README.md");
    }
    await renderCheckpoints(checkpoints, id);
    return d;
  };
  const later = () => {
    clearTimeout(refetch);
    refetch = setTimeout(() => void refresh().catch(() => {}), REFETCH_MS);
  };

  void refresh()
    .then((d) => {
      if (stopped || !d) return;
      stream = api.eventsStream(id, d.events);
      // The page's own connection, not the run's liveness (that is the badge beside its status).
      stream.onopen = () => setConnection("updates: connected");
      stream.onerror = () => setConnection("updates: reconnecting…");
      stream.onmessage = (m: MessageEvent<string>) => {
        const e = JSON.parse(m.data) as IndexedEvent;
        timeline.add(e);
        if (e.event.type === "checkpoint" || e.event.type === "run_finished" || e.event.type === "heartbeat") later();
      };
      stream.addEventListener("run", later);
    })
    .catch((e: Error) => head.replaceChildren(h("p", { class: "error" }, e.message)));

  return () => {
    stopped = true;
    stream?.close();
    clearTimeout(refetch);
    setConnection("");
  };
}

/** The page's sections, empty until the run is fetched. */
function runPanels() {
  return {
    head: h("section", { class: "run-head", data: { testid: "run-head" } }),
    budget: h("section", { class: "panel budget", data: { testid: "budget" } }),
    actions: h("section", { class: "panel actions" }),
    checkpoints: h("section", { class: "panel checkpoints", data: { testid: "checkpoints" } }),
    files: h("section", { class: "panel files-panel" }),
    viewer: h("section", { class: "panel viewer", data: { testid: "viewer" } }),
    detail: h("section", { class: "panel detail", data: { testid: "detail" } }),
  };
}

/** The files panel; whether the run has a deliverable README. */
async function renderFiles(files: HTMLElement, viewer: HTMLElement, id: string): Promise<boolean> {
  const f = await api.files(id);
  clear(files);
  append(
    files,
    h("h2", {}, "Files"),
    fileList(f.files, (p) => void showFile(viewer, id, p)),
    f.truncated && h("p", { class: "note" }, "(list cut)"),
  );
  return f.files.some((x) => x.path === "deliverable/README.md");
}

async function renderCheckpoints(el: HTMLElement, id: string): Promise<void> {
  const c = await api.checkpoints(id);
  clear(el);
  el.append(
    h("h2", {}, `Checkpoints (${c.checkpoints.length})`),
    h(
      "ol",
      {},
      ...c.checkpoints.map((x) =>
        h(
          "li",
          { title: x.commit },
          h("b", {}, x.id),
          ` ${formatTime(x.at)} · turn ${x.turn} · ${x.trigger} · ${x.summary}`,
        ),
      ),
    ),
  );
}

function renderHead(head: HTMLElement, d: RunDetail): void {
  const r = d.run;
  clear(head);
  append(
    head,
    h(
      "h1",
      {},
      r.run_id,
      " ",
      h("span", { class: `status ${r.status}`, data: { testid: "status" } }, r.status),
      driverBadge(r.status, d.liveness.live, d.liveness.stale),
    ),
    h("p", { class: "objective" }, r.objective),
    d.liveness.stale ? h("p", { class: "detail-line stale-line" }, d.liveness.stale) : null,
    r.status_detail ? h("p", { class: "detail-line" }, r.status_detail) : null,
    h(
      "p",
      { class: "meta" },
      `started ${formatTime(r.created_at)} · updated ${formatTime(r.updated_at)} · heartbeat ${Math.round(d.liveness.heartbeat_age_ms / 1000)}s ago · pending: ${r.pending?.type ?? "nothing"} · `,
      `verifiers ${r.verifiers} (${r.consensus}) · last checkpoint ${r.last_checkpoint ?? "none"}`,
    ),
    h(
      "p",
      { class: "roles" },
      ...d.summary.roles.map((x) => h("span", { class: "role" }, h("b", {}, x.role), ` ${x.model}`)),
    ),
  );
}

function showEvent(detail: HTMLElement, e: IndexedEvent): void {
  const d = describe(e.event);
  clear(detail);
  detail.append(
    h("h2", {}, `Event ${e.n}: ${d.who} ${d.kind}`),
    h("pre", { class: "event-json", data: { testid: "event-json" } }, JSON.stringify(e.event, null, 2)),
  );
}

/** The actions panel, built once (a refresh keeps the last action's answer on screen). */
function renderActions(el: HTMLElement, d: RunDetail, after: () => void): void {
  if (!d.actions || el.childElementCount > 0) return;
  const out = h("p", { class: "note", data: { testid: "action-result" } });
  const run =
    (action: string, body: object = {}) =>
    async () => {
      out.textContent = `${action}…`;
      try {
        out.textContent = (await api.action(d.run.run_id, action, body)).message;
        after();
      } catch (e) {
        out.textContent = (e as Error).message;
      }
    };
  const note = h("textarea", { class: "note-text" });
  note.placeholder = "a note for the Director (read at its next direction request)";
  el.append(
    h("h2", {}, "Actions"),
    h("button", { on: { click: run("stop") }, data: { testid: "stop" } }, "Stop"),
    " ",
    h("button", { on: { click: run("resume") }, data: { testid: "resume" } }, "Resume"),
    note,
    h(
      "button",
      { on: { click: () => void run("note", { text: note.value })() }, data: { testid: "send-note" } },
      "Send note to the Director",
    ),
    out,
  );
}

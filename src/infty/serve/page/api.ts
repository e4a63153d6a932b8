/** The page's calls to the server (same origin; the cookie, if any, goes along). */

import type { FleetView } from "../../fleet/view-format.ts";
import type {
  ActionResult,
  ApiError,
  CheckpointList,
  EventsPage,
  FileList,
  RunDetail,
  RunList,
} from "../api-schemas.ts";

export class ApiFailure extends Error {}

async function getJson<T>(path: string): Promise<T> {
  const r = await fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" });
  const body = (await r.json().catch(() => undefined)) as T | ApiError | undefined;
  if (!r.ok) throw new ApiFailure((body as ApiError | undefined)?.error?.message ?? `${path}: HTTP ${r.status}`);
  return body as T;
}

const run = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

/** The fleet's panel, or undefined when the server shows no fleet (404). */
async function fleet(): Promise<FleetView | undefined> {
  const r = await fetch("/api/fleet", { headers: { accept: "application/json" }, credentials: "same-origin" });
  if (r.status === 404) return undefined;
  const body = (await r.json().catch(() => undefined)) as FleetView | ApiError | undefined;
  if (!r.ok) throw new ApiFailure((body as ApiError | undefined)?.error?.message ?? `/api/fleet: HTTP ${r.status}`);
  return body as FleetView;
}

export const api = {
  runs: () => getJson<RunList>("/api/runs"),
  fleet,
  run: (id: string) => getJson<RunDetail>(run(id)),
  events: (id: string, from: number, limit: number) =>
    getJson<EventsPage>(`${run(id)}/events?from=${from}&limit=${limit}`),
  files: (id: string) => getJson<FileList>(`${run(id)}/files`),
  checkpoints: (id: string) => getJson<CheckpointList>(`${run(id)}/checkpoints`),
  /** A file's URL; its path's segments are encoded one by one. */
  fileUrl: (id: string, path: string) => `${run(id)}/files/${path.split("/").map(encodeURIComponent).join("/")}`,
  async fileText(id: string, path: string): Promise<string> {
    const r = await fetch(api.fileUrl(id, path), { credentials: "same-origin" });
    if (!r.ok)
      throw new ApiFailure(
        ((await r.json().catch(() => undefined)) as ApiError | undefined)?.error?.message ?? `HTTP ${r.status}`,
      );
    return r.text();
  },
  eventsStream: (id: string, from: number) => new EventSource(`${run(id)}/events?from=${from}`),
  async action(id: string, action: string, body: object = {}): Promise<ActionResult> {
    const r = await fetch(`${run(id)}/actions/${action}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-relay-action": "1" },
      body: JSON.stringify(body),
    });
    const out = (await r.json().catch(() => undefined)) as ActionResult | ApiError | undefined;
    if (!r.ok) throw new ApiFailure((out as ApiError | undefined)?.error?.message ?? `HTTP ${r.status}`);
    return out as ActionResult;
  },
};

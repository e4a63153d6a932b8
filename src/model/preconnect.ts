/**
 * Opening the model's connection ahead of the first request, while the session starts. Bun keeps
 * one keep-alive pool per process, so the first `fetch` to that origin takes the connection made
 * here once it is ready; a `fetch` does not wait for one still being made, it opens its own. So
 * this pays where TCP and TLS are done before the first request, 40–60 ms after the session
 * starts (scripts/bench/first-request.ts, over TLS: 23 ms sooner at a 10 ms round trip, 11 ms at
 * 40, nothing measurable at 80, where the early connection goes unused). Under Node and Deno
 * nothing happens.
 */

/** Variables that send the model's requests through a proxy: a connection made here would go around it. */
const PROXY_VARS = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

type Preconnect = (url: string) => void;

/**
 * Origins connected to lately, and when: a process that opens many sessions (infty's roles)
 * connects once, not once per session; a connection idle longer may be gone, so later ones do again.
 */
const RECENT_MS = 60_000;
const recentOrigins = new Map<string, number>();

/**
 * Starts connecting to `baseUrl`'s origin, in the background; says why not where it does not
 * (no connection of the runtime's own pool to make, a proxy in the way, no http(s) URL).
 */
export function preconnectModel(
  baseUrl: string,
  env: Record<string, string | undefined> = process.env,
  /** The runtime's `fetch.preconnect`; null where it has none. */
  preconnect: Preconnect | null = runtimePreconnect(),
  now: number = Date.now(),
): { started: true } | { started: false; why: string } {
  if (!preconnect) return { started: false, why: "this runtime's fetch cannot preconnect" };
  const proxy = PROXY_VARS.find((name) => (env[name] ?? "").trim() !== "");
  if (proxy) return { started: false, why: `${proxy} is set: requests go through the proxy` };
  let origin: string;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== "https:" && url.protocol !== "http:") return { started: false, why: "not an http(s) URL" };
    origin = url.origin;
  } catch {
    return { started: false, why: "not a URL" };
  }
  const last = recentOrigins.get(origin);
  if (last !== undefined && now - last < RECENT_MS) return { started: false, why: "connected to lately" };
  try {
    preconnect(origin);
    recentOrigins.set(origin, now);
  } catch (e) {
    // Only an optimisation: the request itself connects, and reports what fails.
    return { started: false, why: (e as Error).message };
  }
  return { started: true };
}

function runtimePreconnect(): Preconnect | null {
  const candidate = (fetch as unknown as { preconnect?: unknown }).preconnect;
  return typeof candidate === "function" ? (candidate as Preconnect).bind(fetch) : null;
}

/** Which runtime runs relay: the compiled binary, Bun from source, Deno or Node. */

export type Runtime = "bun-compiled" | "bun" | "deno" | "node";

export function currentRuntime(): Runtime {
  const g = globalThis as { Bun?: { isStandaloneExecutable?: boolean }; Deno?: unknown };
  if (g.Bun) return g.Bun.isStandaloneExecutable || import.meta.url.includes("$bunfs") ? "bun-compiled" : "bun";
  if (g.Deno) return "deno";
  return "node";
}

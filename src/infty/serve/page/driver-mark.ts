/** Whether a run's driver is alive, as the page marks it: plain logic, no DOM (the server's tests check it). */

/**
 * What to show beside a run's status: "live" only while a process drives a run that says
 * running (a finished run's driver may still hold the lease while it exits, and a restore holds
 * it on a stopped run: neither is a run going on), "stale" for one that says running with its
 * driver gone.
 */
export function driverMark(status: string, live: boolean, stale: string | undefined): "live" | "stale" | undefined {
  if (status !== "running") return undefined;
  if (stale) return "stale";
  return live ? "live" : undefined;
}

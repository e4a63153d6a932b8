/**
 * Named places where a test may kill this process outright, to prove that a kill there loses
 * nothing: `RELAY_TEST_CRASH_AT=name` (or `name#2` for its second passage) makes the process
 * SIGKILL itself when it gets there. Unset, each call is one environment lookup.
 */
const passed = new Map<string, number>();

export function crashPoint(name: string): void {
  const at = process.env.RELAY_TEST_CRASH_AT;
  if (!at?.startsWith(name)) return;
  const n = (passed.get(name) ?? 0) + 1;
  passed.set(name, n);
  if (at === name || at === `${name}#${n}`) process.kill(process.pid, "SIGKILL");
}

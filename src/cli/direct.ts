/**
 * The servers relay re-execs itself as, started without the command tree. `relay executor` and
 * `relay code-mode-host` are spawned with no flag for every session (and every infty role), so
 * parsing their command line with commander would cost each of them its load, about 3 ms of a
 * 20 ms start-up. Any other command line, `--help` and `--check` among them, goes through
 * program.ts as usual.
 */
import { logCommandStart } from "./command-log.ts";

const DIRECT: Readonly<Record<string, () => Promise<void>>> = {
  executor: async () => (await import("./serve-executor.ts")).serveExecutorMain(),
  "code-mode-host": async () => (await import("./serve-code-mode-host.ts")).serveCodeModeHostMain(),
};

/** The server `argv` names with nothing else on its command line, if any. */
export function directServer(argv: readonly string[]): (() => Promise<void>) | undefined {
  if (argv.length !== 3) return undefined;
  const name = argv[2]!;
  const serve = Object.hasOwn(DIRECT, name) ? DIRECT[name] : undefined;
  return (
    serve &&
    (() => {
      logCommandStart(name);
      return serve();
    })
  );
}

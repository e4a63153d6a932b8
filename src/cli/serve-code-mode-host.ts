/** `relay code-mode-host` serving on stdio (cli/code-mode-host.ts holds its help; cli/direct.ts starts it). */
import { CodeModeEngine } from "../codemode/engine.ts";
import { serveCodeMode } from "../codemode/server.ts";
import { runUntilClosed, serveStdio } from "../protocol/stdio-server.ts";
import { Log } from "../util/log.ts";

const log = Log.create("code-mode-host");

export async function serveCodeModeHostMain(): Promise<void> {
  // Requests are read while QuickJS loads (its wasm compiles on background threads, started by
  // main.ts), and served once it has.
  const t = performance.now();
  const loading = CodeModeEngine.load();
  const peer = serveStdio({ name: "code-mode-host" });
  const shutdown = serveCodeMode(peer, loading);
  // A parent that ends its input before asking anything (a probe, a session that never ran code)
  // is not kept waiting for the load: the peer closes only once every request has its answer.
  const loaded = await Promise.race([loading.then(() => true), peer.closed.then(() => false)]);
  if (loaded) log.debug("QuickJS loaded", { ms: Math.round(performance.now() - t) });
  await runUntilClosed(peer, shutdown);
}

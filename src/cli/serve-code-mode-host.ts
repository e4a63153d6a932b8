/** `relay code-mode-host` serving on stdio (cli/code-mode-host.ts holds its help; cli/direct.ts starts it). */
import { CodeModeEngine } from "../codemode/engine.ts";
import { serveCodeMode } from "../codemode/host.ts";
import { runUntilClosed, serveStdio } from "../protocol/stdio-server.ts";
import { Log } from "../util/log.ts";

const log = Log.create("code-mode-host");

export async function serveCodeModeHostMain(): Promise<void> {
  // Load QuickJS before reading requests, so every request finds its handler.
  const t = performance.now();
  const engine = await CodeModeEngine.load();
  log.debug("QuickJS loaded", { ms: Math.round(performance.now() - t) });
  const peer = serveStdio({ name: "code-mode-host" });
  const shutdown = serveCodeMode(peer, engine);
  await runUntilClosed(peer, shutdown);
}

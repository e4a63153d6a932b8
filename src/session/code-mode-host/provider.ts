/**
 * `HostProvider`: code-mode sessions multiplexed over one `code-mode-host` process, spawned
 * lazily (or taken from spare hosts started in advance) and replaced when it dies.
 */

import { CodeModeErrorCode, CodeModeMethods, type SessionLimits } from "../../contracts/code-mode.ts";
import type { CodeModeCallbacks, CodeModeProvider, CodeModeSession } from "../../contracts/code-mode-provider.ts";
import { type HostProgram, resolveHostProgram, spawnHost } from "../../protocol/code-mode-host-program.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { HostConnection } from "./connection.ts";
import { hostSession } from "./session.ts";

export interface HostProviderOptions {
  program?: HostProgram;
  /** Keep this many spare hosts started in advance (0: spawn on demand). */
  pool?: number;
}

export class HostProvider implements CodeModeProvider {
  readonly kind = "host";
  private current: HostConnection | undefined;
  private spares: HostConnection[] = [];
  private readonly all = new Set<HostConnection>();
  private readonly program: HostProgram;
  private readonly poolSize: number;

  constructor(o: HostProviderOptions = {}) {
    this.program = o.program ?? resolveHostProgram();
    this.poolSize = o.pool ?? 0;
  }

  /** The live host's pid (for tests that kill it). */
  get hostPid(): number | undefined {
    return this.current?.alive ? this.current.child.pid : undefined;
  }

  /** Starts spare hosts up to the pool size; resolves when they are ready. */
  async prewarm(): Promise<void> {
    while (this.spares.length < this.poolSize) {
      const c = this.start();
      if ("error" in c) return;
      this.spares.push(c.ok);
    }
    await Promise.all(this.spares.map((s) => s.warm()));
  }

  /** Whether the live host's VM housekeeping is done (benchmarks wait for it between blocks). */
  async vmsSettled(): Promise<boolean> {
    const c = this.current;
    if (!c?.alive) return true;
    const r = await c.child.peer.call(CodeModeMethods.hello, {});
    return "error" in r || (r.ok.vms?.settled ?? true);
  }

  /** Starts (or reuses) the current host and waits until it has warmed up. */
  async ensureWarm(): Promise<Result<null>> {
    const c = await this.connection();
    if ("error" in c) return c;
    return c.ok.warm();
  }

  /** Stops the current host; the next session uses a spare or a new host. */
  async retire(): Promise<void> {
    const c = this.current;
    this.current = undefined;
    if (c) {
      this.all.delete(c);
      await c.child.shutdown();
    }
  }

  private start(): Result<HostConnection> {
    const child = spawnHost(this.program);
    if ("error" in child) return child;
    const conn = new HostConnection(child.ok);
    this.all.add(conn);
    return ok(conn);
  }

  private connecting: Promise<Result<HostConnection>> | undefined;

  /** The live host, starting one (or taking a spare) when there is none; concurrent callers share it. */
  private connection(): Promise<Result<HostConnection>> {
    if (this.current?.alive) return Promise.resolve(ok(this.current));
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<Result<HostConnection>> {
    let conn: HostConnection | undefined;
    while (this.spares.length && !conn) {
      const s = this.spares.shift()!;
      if (s.alive) conn = s;
    }
    if (!conn) {
      const started = this.start();
      if ("error" in started)
        return err(CodeModeErrorCode.HostDied, `could not start the code-mode host: ${started.error.message}`);
      conn = started.ok;
    }
    this.current = conn;
    // Replace the spare a little later, so its start does not compete with this first command.
    if (this.poolSize > 0) setTimeout(() => void this.prewarm(), 200).unref?.();
    const ready = await conn.ready;
    if ("error" in ready)
      return err(CodeModeErrorCode.HostDied, `the code-mode host did not start: ${ready.error.message}`);
    return ok(conn);
  }

  async openSession(callbacks: CodeModeCallbacks, limits?: SessionLimits): Promise<Result<CodeModeSession>> {
    const c = await this.connection();
    if ("error" in c) return c;
    const conn = c.ok;
    const created = conn.hostError(await conn.child.peer.call(CodeModeMethods.createSession, { limits }));
    if ("error" in created) return created;
    return ok(hostSession(conn, created.ok.session_id, callbacks));
  }

  async close(): Promise<void> {
    const conns = [...this.all];
    this.all.clear();
    this.spares = [];
    this.current = undefined;
    await Promise.all(conns.map((c) => c.child.shutdown()));
  }
}

/** Shared setup for session tests: temp home and workspace, fake model server, event capture. */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultConfig, type RelayConfig } from "../../src/config/config.ts";
import type { SessionEvent } from "../../src/contracts/events.ts";
import type { Approver } from "../../src/policy/approval.ts";
import { nonInteractiveApprover } from "../../src/policy/approval.ts";
import type { SessionRunOptions } from "../../src/session/open-options.ts";
import { runSession } from "../../src/session/runtime.ts";
import { type FakeModelServer, startFakeModelServer } from "../support/fake-model-server.ts";
import { useTestRelay } from "../support/self.ts";

export interface Harness extends AsyncDisposable {
  home: string;
  workspace: string;
  server: FakeModelServer;
  events: SessionEvent[];
  config(over?: Partial<RelayConfig>): RelayConfig;
  run(o: Partial<SessionRunOptions> & { prompt?: string }): ReturnType<typeof runSession>;
}

export async function harness(): Promise<Harness> {
  useTestRelay();
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-home-"));
  const workspace = mkdtempSync(path.join(os.tmpdir(), "relay-ws-"));
  const server = await startFakeModelServer();
  const events: SessionEvent[] = [];
  const h: Harness = {
    home,
    workspace,
    server,
    events,
    config(over = {}) {
      return {
        ...defaultConfig(),
        model: "test-model",
        model_provider: "openai-responses",
        base_url: server.baseUrl,
        sandbox_mode: "danger-full-access",
        ...over,
      };
    },
    run(o) {
      return runSession({
        home,
        config: h.config(),
        cwd: workspace,
        approver: nonInteractiveApprover,
        emit: (e) => events.push(e),
        signal: new AbortController().signal,
        ...o,
      });
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      rmSync(home, { recursive: true, force: true });
      rmSync(workspace, { recursive: true, force: true });
    },
  };
  return h;
}

export function approverSaying(answer: "approved" | "denied", asked: string[] = []): Approver {
  return {
    interactive: true,
    async ask(req) {
      asked.push(`${req.kind}:${req.summary}`);
      return answer;
    },
  };
}

/** The input items of a recorded Responses request. */
export function inputOf(body: unknown): Array<Record<string, any>> {
  return ((body as { input?: unknown[] }).input ?? []) as Array<Record<string, any>>;
}

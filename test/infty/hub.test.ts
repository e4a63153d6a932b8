import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { defaultConfig } from "../../src/config/config.ts";
import type { SessionEvent } from "../../src/contracts/events.ts";
import { CrossSessionHub } from "../../src/infty/hub.ts";
import { nonInteractiveApprover } from "../../src/policy/approval.ts";
import { openSession } from "../../src/session/runtime.ts";
import { hang, reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { useTestRelay } from "../support/self.ts";

describe("cross-session hub", () => {
  test("registers sessions by role and id, posts turns, streams events, unregisters on drop, times out", async () => {
    useTestRelay();
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-hub-"));
    await using server = await startFakeModelServer();
    const hub = new CrossSessionHub();
    const config = {
      ...defaultConfig(),
      model: "m",
      base_url: server.baseUrl,
      sandbox_mode: "danger-full-access" as const,
    };
    try {
      let id: string | undefined;
      const opened = await openSession({
        home,
        config,
        cwd: home,
        approver: nonInteractiveApprover,
        emit: hub.emitterFor(() => id),
      });
      assert.ok("ok" in opened);
      id = opened.ok.id;
      hub.register("run-1", "solver", opened.ok);
      assert.equal(hub.get("run-1", "solver")?.handle.id, id);
      assert.equal(hub.bySessionId(id)?.role, "solver");
      assert.equal(hub.get("run-2", "solver"), undefined, "runs are separate");

      const seen: SessionEvent["type"][] = [];
      const off = hub.streamEvents(id, (e) => seen.push(e.type));
      server.enqueue(reply().text("first answer"));
      const answer = await hub.awaitFirstAssistant("run-1", "solver", "hello", 10_000, new AbortController().signal);
      assert.deepEqual(answer, { ok: "first answer" });
      assert.ok(seen.includes("assistant_message") && seen.includes("turn_completed"));
      off();

      server.enqueue(hang());
      const slow = await hub.awaitFirstAssistant(
        "run-1",
        "solver",
        "are you there?",
        300,
        new AbortController().signal,
      );
      assert.ok(
        "error" in slow &&
          slow.error.code === "timeout" &&
          /solver gave no answer within 300 ms/.test(slow.error.message),
      );

      await opened.ok.close();
      hub.unregister("run-1", "solver");
      assert.equal(hub.get("run-1", "solver"), undefined);
      assert.equal(hub.bySessionId(id), undefined);
      const gone = await hub.postUserTurn("run-1", "solver", "x", new AbortController().signal);
      assert.ok("error" in gone && gone.error.code === "no_session");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

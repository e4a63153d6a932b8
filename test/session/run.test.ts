import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { capabilityRoot } from "../../src/config/capability-root.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { SUMMARY_PREFIX } from "../../src/session/compaction.ts";
import { httpError, reply } from "../support/fake-model-server.ts";
import { approverSaying, harness, inputOf } from "./run-support.ts";

describe("relay run sessions against the fake model server", () => {
  test("a full session: executor tools advertised, a real command run, output fed back, rollout written", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply()
        .text("Running it.")
        .toolCall("exec_command", { cmd: "echo relay-$((40+2)) > out.txt; cat out.txt" }, { callId: "call_1" })
        .usage({ input: 100, output: 20 }),
      reply().text("The file says relay-42.").usage({ input: 150, output: 10 }),
    );
    const r = await h.run({ prompt: "write and read a file" });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.status, "completed");
    assert.equal(r.ok.outcome.finalMessage, "The file says relay-42.");
    assert.equal(readFileSync(path.join(h.workspace, "out.txt"), "utf8"), "relay-42\n");

    const [first, second] = h.server.requests;
    const tools = (first!.body.tools as Array<{ name: string }>).map((t) => t.name).sort();
    assert.deepEqual(tools, ["apply_patch", "exec_command", "grep_files", "list_dir", "read_file", "write_stdin"]);
    assert.match(JSON.stringify(inputOf(first!.body)[0]), /## Environment/, "developer instructions come first");
    const out = inputOf(second!.body).find((i) => i.type === "function_call_output");
    assert.equal(out?.call_id, "call_1");
    assert.match(
      out?.output,
      /^Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\nProcess exited with code 0\nOriginal token count: \d+\nOutput:\nrelay-42\n$/,
    );

    const saved = await readRollout(r.ok.rolloutPath);
    assert.ok("ok" in saved);
    const types = saved.ok.lines.map((l) => l.type);
    assert.equal(types[0], "session_meta");
    assert.ok(types.includes("turn_context") && types.includes("event_msg") && types.includes("response_item"));
    assert.deepEqual(
      saved.ok.items.map((i) => i.type),
      ["message", "message", "function_call", "function_call_output", "message"],
    );
    assert.ok(h.events.some((e) => e.type === "tool_result" && e.success));
  });

  test("Chat Completions works the same way", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply().toolCall("exec_command", { cmd: "printf chat-ok" }).chatStyle({ toolCalls: "fragments" }),
      reply().text("done via chat"),
    );
    const r = await h.run({ prompt: "go", config: h.config({ model_provider: "openai-chat" }) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.finalMessage, "done via chat");
    assert.equal(h.server.requests[0]!.path, "/v1/chat/completions");
    const toolMsg = (h.server.requests[1]!.body.messages as Array<{ role: string; content: string }>).find(
      (m) => m.role === "tool",
    );
    assert.match(toolMsg!.content, /Output:\nchat-ok$/);
  });

  test("approvals: untrusted asks, a refusal reaches the model, an approval runs the command", async () => {
    await using h = await harness();
    const asked: string[] = [];
    h.server.enqueue(reply().toolCall("exec_command", { cmd: "touch denied.txt" }), reply().text("ok, I won't"));
    const denied = await h.run({
      prompt: "p",
      config: h.config({ approval_policy: "untrusted" }),
      approver: approverSaying("denied", asked),
    });
    assert.ok("ok" in denied);
    assert.deepEqual(asked, ["exec:touch denied.txt"]);
    assert.ok(!existsSync(path.join(h.workspace, "denied.txt")));
    const out = inputOf(h.server.requests[1]!.body).find((i) => i.type === "function_call_output");
    assert.equal(out?.output, "exec_command was not run: the user declined: touch denied.txt");

    h.server.enqueue(
      reply().toolCall("exec_command", { cmd: "ls" }),
      reply().toolCall("exec_command", { cmd: "touch granted.txt" }),
      reply().text("done"),
    );
    const granted = await h.run({
      prompt: "p",
      config: h.config({ approval_policy: "untrusted" }),
      approver: approverSaying("approved", asked),
    });
    assert.ok("ok" in granted);
    assert.deepEqual(asked.slice(1), ["exec:touch granted.txt"], "read-only ls ran without asking");
    assert.ok(existsSync(path.join(h.workspace, "granted.txt")));
  });

  test("approvals without a terminal are refused with a clear message; escalation under never is rejected", async () => {
    await using h = await harness();
    h.server.enqueue(reply().toolCall("exec_command", { cmd: "rm -rf build" }), reply().text("understood"));
    const r = await h.run({ prompt: "p", config: h.config({ approval_policy: "untrusted" }) });
    assert.ok("ok" in r);
    const out = inputOf(h.server.requests[1]!.body).find((i) => i.type === "function_call_output");
    assert.match(
      out?.output,
      /needs the user's approval \(approval policy untrusted\), but relay is not running on a terminal, so it was not run/,
    );

    h.server.enqueue(
      reply().toolCall("exec_command", {
        cmd: "id",
        sandbox_permissions: "require_escalated",
        justification: "need root",
      }),
      reply().text("ok"),
    );
    const never = await h.run({ prompt: "p", config: h.config({ approval_policy: "never" }) });
    assert.ok("ok" in never);
    const out2 = inputOf(h.server.requests[3]!.body).find((i) => i.type === "function_call_output");
    assert.match(out2?.output, /approval policy is never; reject command — you cannot ask for escalated permissions/);
  });

  test("provider errors: auth and missing model are clear failures; a 500 is retried", async () => {
    await using h = await harness();
    h.server.enqueue(
      httpError(401, {
        error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" },
      }),
    );
    const auth = await h.run({ prompt: "p" });
    assert.ok("error" in auth);
    assert.equal(auth.error.code, "model_auth");
    assert.match(auth.error.message, /OPENAI_API_KEY/);
    assert.match(auth.error.message, /relay run --resume/);

    h.server.enqueue(
      httpError(404, { error: { message: "The model `nope` does not exist", code: "model_not_found" } }),
    );
    const missing = await h.run({ prompt: "p" });
    assert.ok("error" in missing && missing.error.code === "model_model_not_found");

    h.server.enqueue(httpError(500, { error: { message: "boom" } }), reply().text("recovered"));
    const retried = await h.run({ prompt: "p" });
    assert.ok("ok" in retried, JSON.stringify(retried));
    assert.equal(retried.ok.outcome.finalMessage, "recovered");
    assert.ok(h.events.some((e) => e.type === "retrying"));
  });

  test("compaction replaces history with a summary and keeps the latest request last", async () => {
    await using h = await harness();
    const config = h.config({ model_context_window: 1000, auto_compact_fraction: 0.5 });
    h.server.enqueue(
      reply().toolCall("exec_command", { cmd: "echo step one" }).usage({ input: 900, output: 50 }),
      reply().text("HANDOFF: ran step one; next run step two").usage({ input: 950, output: 30 }),
      reply().text("all done").usage({ input: 120, output: 5 }),
    );
    const r = await h.run({ prompt: "THE LATEST REQUEST: do the two steps", config });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.finalMessage, "all done");
    const compactReq = inputOf(h.server.requests[1]!.body);
    assert.match(JSON.stringify(compactReq.at(-1)), /Context checkpoint/);
    assert.deepEqual(h.server.requests[1]!.body.tools ?? [], [], "the summary turn offers no tools");
    const after = inputOf(h.server.requests[2]!.body).filter((i) => i.type === "message" && i.role === "user");
    assert.ok(JSON.stringify(after.at(-2)).includes(SUMMARY_PREFIX.slice(0, 30)));
    assert.ok(JSON.stringify(after.at(-2)).includes("HANDOFF: ran step one"));
    assert.ok(JSON.stringify(after.at(-1)).includes("THE LATEST REQUEST"), "the latest request is last");
    assert.ok(
      !inputOf(h.server.requests[2]!.body).some((i) => i.type === "function_call_output"),
      "old tool traffic is gone",
    );
    const saved = await readRollout(r.ok.rolloutPath);
    assert.ok("ok" in saved);
    assert.ok(saved.ok.lines.some((l) => l.type === "compacted"));
    assert.ok(h.events.some((e) => e.type === "context_compacted" && !e.fallback));
  });

  test("a failed summary turn falls back to emptying old tool outputs, never an empty context", async () => {
    await using h = await harness();
    const config = h.config({ model_context_window: 1000, auto_compact_fraction: 0.5 });
    h.server.enqueue(
      reply().toolCall("exec_command", { cmd: "echo a" }).usage({ input: 900, output: 10 }),
      httpError(400, { error: { message: "bad compaction", code: "invalid_request" } }),
      reply().text("finished anyway").usage({ input: 100, output: 5 }),
    );
    const r = await h.run({ prompt: "keep me", config });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.finalMessage, "finished anyway");
    assert.ok(h.events.some((e) => e.type === "context_compacted" && e.fallback));
    assert.ok(JSON.stringify(inputOf(h.server.requests[2]!.body)).includes("keep me"));
  });

  test("skills: discovered on the executor, cataloged, and loaded with $name; unknown environments warn", async () => {
    await using h = await harness();
    const skills = path.join(h.workspace, "skills", "deploy");
    mkdirSync(skills, { recursive: true });
    writeFileSync(
      path.join(skills, "SKILL.md"),
      "---\nname: deploy\ndescription: How to deploy this service\n---\nRun ./deploy.sh --prod after tests pass.\n",
    );
    h.server.enqueue(reply().text("ok"));
    const r = await h.run({
      prompt: "use $deploy please",
      capabilityRoots: [
        capabilityRoot("local", path.join(h.workspace, "skills")),
        capabilityRoot("gpu-box", "/opt/skills"),
      ],
    });
    assert.ok("ok" in r);
    const input = JSON.stringify(inputOf(h.server.requests[0]!.body));
    assert.match(input, /## Skills.*- deploy: How to deploy this service/);
    assert.match(input, /<skill name=\\"deploy\\".*Run .\/deploy.sh --prod after tests pass/);
    assert.ok(
      h.events.some(
        (e) =>
          e.type === "warning" &&
          /capability root gpu-box:\/opt\/skills skipped: this session has no environment named "gpu-box".*never read from the local filesystem/.test(
            e.message,
          ),
      ),
    );
  });

  test("a prompt is required unless resuming; resume of a finished session needs a prompt", async () => {
    await using h = await harness();
    const none = await h.run({});
    assert.ok("error" in none && none.error.code === "usage");
    h.server.enqueue(reply().text("first"));
    const first = await h.run({ prompt: "one" });
    assert.ok("ok" in first);
    const again = await h.run({ resume: "last" });
    assert.ok("error" in again && again.error.code === "nothing_to_resume");
    h.server.enqueue(reply().text("second"));
    const next = await h.run({ resume: first.ok.sessionId, prompt: "two" });
    assert.ok("ok" in next);
    assert.equal(next.ok.rolloutPath, first.ok.rolloutPath, "resume appends to the same file");
    const texts = JSON.stringify(inputOf(h.server.requests[1]!.body));
    assert.ok(texts.includes("one") && texts.includes("first") && texts.includes("two"), "history carried over");
  });
});

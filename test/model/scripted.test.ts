import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { ModelError, type ModelEvent, type ModelRequest } from "../../src/model/client.ts";
import { userMessage } from "../../src/model/items.ts";
import { createScriptedClient, estimateUsage, LAST_SESSION_ID, scriptDeltas } from "../../src/model/scripted.ts";
import { drain } from "../support/fake-model-server.ts";

const REQUEST: ModelRequest = {
  model: "scripted",
  instructions: "Be a demo.",
  input: [userMessage("make hello.py")],
  tools: [],
  parallelToolCalls: true,
};

async function scriptFile(content: string): Promise<{ file: string; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "relay-script-"));
  const file = path.join(dir, "script.json");
  await writeFile(file, content);
  return { file, [Symbol.asyncDispose]: () => rm(dir, { recursive: true, force: true }) };
}

const SCRIPT = {
  turns: [
    {
      text: "I will create the script and run it.",
      tool_calls: [
        { name: "exec_command", arguments: { cmd: "printf 'print(1)' > hello.py" } },
        { name: "apply_patch", input: "*** Begin Patch\n*** End Patch\n" },
      ],
      usage: { input_tokens: 100, output_tokens: 20 },
    },
    { reasoning: "It printed 1.", text: "Done: hello.py prints 1." },
  ],
};

describe("scripted provider", () => {
  test("$last_session_id stands for the newest running process the request's tool outputs name", async () => {
    const write = { name: "write_stdin", arguments: { session_id: LAST_SESSION_ID, chars: "y\n" } };
    const model = createScriptedClient({ script: { turns: [{ tool_calls: [write] }, { tool_calls: [write] }] } });
    const outputs = (ids: number[]) =>
      ids.map((id, i) => ({
        type: "function_call_output" as const,
        call_id: `c${i}`,
        output: `Chunk ID: ab12cd\nProcess running with session ID ${id}\nOutput:\n`,
      }));
    const args = async (input: ModelRequest["input"]) => {
      const { events } = await drain(model.stream({ ...REQUEST, input }));
      const call = events.find((e) => e.type === "item" && e.item.type === "function_call");
      return JSON.parse((call as { item: { arguments: string } }).item.arguments) as Record<string, unknown>;
    };
    assert.deepEqual(await args([userMessage("go"), ...outputs([1234, 56789])]), { session_id: 56789, chars: "y\n" });
    // Nothing to stand for: the placeholder is sent as written, and the tool says it is not a session id.
    assert.deepEqual(await args([userMessage("go")]), { session_id: LAST_SESSION_ID, chars: "y\n" });
  });

  test("replays one turn per stream() call: deltas, items, completed", async () => {
    await using s = await scriptFile(JSON.stringify(SCRIPT));
    const model = createScriptedClient({ scriptPath: s.file });
    assert.equal(model.provider, "scripted");

    const first = await drain(model.stream(REQUEST));
    assert.equal(first.error, undefined);
    const deltas = first.events.filter((e) => e.type === "text_delta");
    assert.ok(deltas.length > 1 && deltas.length <= 4);
    assert.equal(deltas.map((e) => (e as { delta: string }).delta).join(""), SCRIPT.turns[0]!.text);
    const items = first.events.flatMap((e) => (e.type === "item" ? [e.item] : []));
    assert.deepEqual(
      items.map((i) => i.type),
      ["message", "function_call", "custom_tool_call"],
    );
    const call = items[1] as { name: string; arguments: string; call_id: string };
    assert.equal(call.name, "exec_command");
    assert.deepEqual(JSON.parse(call.arguments), { cmd: "printf 'print(1)' > hello.py" });
    assert.equal(call.call_id, "call_scripted_1_1");
    assert.equal((items[2] as { input: string }).input, "*** Begin Patch\n*** End Patch\n");
    assert.deepEqual(first.events.at(-1), {
      type: "completed",
      responseId: "resp_scripted_1",
      usage: { input_tokens: 100, output_tokens: 20, total_tokens: 120 },
    });

    const second = await drain(model.stream(REQUEST));
    assert.equal(second.error, undefined);
    assert.deepEqual(
      second.events.filter((e) => e.type === "item").map((e) => (e as Extract<ModelEvent, { type: "item" }>).item.type),
      ["reasoning", "message"],
    );
    const done = second.events.at(-1) as Extract<ModelEvent, { type: "completed" }>;
    assert.deepEqual(done.usage, estimateUsage(REQUEST, SCRIPT.turns[1]!));
    const inputBytes = new TextEncoder().encode(
      REQUEST.instructions + JSON.stringify(REQUEST.input) + JSON.stringify(REQUEST.tools),
    ).length;
    assert.equal(done.usage!.input_tokens, Math.ceil(inputBytes / 4));
    assert.equal(model.turnsUsed, 2);
  });

  test("running out of turns is a clear script error", async () => {
    const model = createScriptedClient({ script: { turns: [{ text: "only turn" }] } });
    await drain(model.stream(REQUEST));
    const { error } = await drain(model.stream(REQUEST));
    assert.ok(error instanceof ModelError);
    assert.equal(error.code, "script");
    assert.match(error.message, /the scripted model has no turn left \(turn 2 of 1\)/i);
  });

  test("an invalid script file names the file and the zod issues", async () => {
    await using s = await scriptFile(JSON.stringify({ turns: [{ text: 5, tool_calls: [{ name: "x" }] }] }));
    const { error } = await drain(createScriptedClient({ scriptPath: s.file }).stream(REQUEST));
    assert.ok(error instanceof ModelError);
    assert.equal(error.code, "script");
    assert.ok(error.message.includes(s.file), error.message);
    assert.match(error.message, /turns\[0\]\.text/);
    assert.match(error.message, /turns\[0\]\.tool_calls\[0\]/);
  });

  test("a script that is not JSON, or missing, is a script error naming the file", async () => {
    await using s = await scriptFile("{ turns: oops");
    const bad = await drain(createScriptedClient({ scriptPath: s.file }).stream(REQUEST));
    assert.ok(bad.error instanceof ModelError);
    assert.match(bad.error.message, /not valid JSON/);
    assert.ok(bad.error.message.includes(s.file));
    const missing = await drain(createScriptedClient({ scriptPath: `${s.file}.nope` }).stream(REQUEST));
    assert.ok(missing.error instanceof ModelError);
    assert.equal(missing.error.code, "script");
    assert.ok(missing.error.message.includes(`${s.file}.nope`));
  });

  test("an aborted signal stops the replay", async () => {
    const model = createScriptedClient({ script: { turns: [{ text: "a b c d e f" }] }, deltaDelayMs: 20 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 5);
    const { events, error } = await drain(model.stream(REQUEST, ac.signal));
    assert.ok(error instanceof Error);
    assert.equal(error.name, "AbortError");
    assert.equal(events.filter((e) => e.type === "completed").length, 0);
  });

  test("scriptDeltas cuts text into at most four word-aligned pieces", () => {
    assert.deepEqual(scriptDeltas(""), []);
    assert.deepEqual(scriptDeltas("one"), ["one"]);
    assert.deepEqual(scriptDeltas("one two"), ["one ", "two"]);
    const many = "a b c d e f g h i j";
    assert.equal(scriptDeltas(many).length, 4);
    assert.equal(scriptDeltas(many).join(""), many);
  });
});

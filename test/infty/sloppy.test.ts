/**
 * `relay infty` against a fake model that behaves like real ones (over real HTTP/SSE): JSON in
 * fences and prose, questions in prose, extra and null fields, upper-case enums, a server that
 * refuses structured output, a stalled stream, a claim that escapes the run store. Each scenario
 * ends in a verified deliverable, or in the documented clean stop.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { checkDeliverable } from "../../src/infty/deliverable.ts";
import { readClaimsIndex } from "../../src/infty/index-files.ts";
import { type InftyEvent, runInfty } from "../../src/infty/orchestrator.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import {
  type FakeModelServer,
  hang,
  httpError,
  later,
  type RecordedRequest,
  reply,
} from "../support/fake-model-server.ts";
import { DELIVER, setup as inftySetup } from "../support/infty-timeline.ts";

const patch = (files: Record<string, string>) => ({
  input: `*** Begin Patch\n${Object.entries(files)
    .map(
      ([f, text]) =>
        `*** Add File: ${f}\n${text
          .split("\n")
          .map((l) => `+${l}`)
          .join("\n")}`,
    )
    .join("\n")}\n*** End Patch\n`,
});
const CLAIM = {
  "artifacts/answer.txt": "42",
  "memory/claims/answer.json": '{"claim": "artifacts/answer.txt holds 42", "evidence": ["artifacts/answer.txt"]}',
};

/** The shared fixture, plus a run of the objective this file's scenarios work on. */
async function setup(api: "openai-responses" | "openai-chat" = "openai-responses") {
  const t = await inftySetup(api);
  const run = (runId: string, extra: Partial<Parameters<typeof runInfty>[0]> = {}) =>
    runInfty({
      home: t.home,
      config: t.config,
      objective: "Write 42 to artifacts/answer.txt and deliver it.",
      runId,
      verifiers: 1,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
      ...extra,
    });
  return Object.assign(t, { run });
}

/** Which role sent a request: its role prompt is in the instructions it carries. */
function roleOf(r: RecordedRequest): string {
  const all = JSON.stringify(r.body);
  if (all.includes("# Role: Solver")) return "solver";
  if (all.includes("# Role: Director")) return "director";
  return "verifier";
}

/** The role's full name ("verifier-2"), from the line that tells each session who it is. */
const roleName = (r: RecordedRequest) => /You are the (\S+) of run/.exec(JSON.stringify(r.body))?.[1];

/** How many verification requests a request's history holds: 1 for a fresh Verifier. */
const requestsSeen = (r: RecordedRequest) =>
  (JSON.stringify(r.body.input).match(/\\"type\\": \\"verification_request\\"/g) ?? []).length;

function lastUser(server: FakeModelServer, i: number): string {
  const body = server.requests[i]!.body;
  const input = (body.input ?? body.messages ?? []) as Array<{
    type?: string;
    role?: string;
    content?: string | Array<{ text?: string }>;
  }>;
  const u = input.filter((x) => x.role === "user").at(-1);
  return typeof u?.content === "string" ? u.content : (u?.content ?? []).map((c) => c.text ?? "").join("");
}

/** The rollout of each role (solver, verifier-1, verifier-2), as run.json records them now. */
function readRollouts(home: string, runId: string): string[] {
  const meta = JSON.parse(readFileSync(path.join(home, "infty", runId, "run.json"), "utf8")) as {
    roles: Array<{ role: string; rollout_path: string }>;
  };
  return ["solver", "verifier-1", "verifier-2"].map(
    (role) => meta.roles.find((x) => x.role === role)?.rollout_path ?? "",
  );
}

/** A well-behaved run: claim, verification, pass, deliverable, its verification. */
function happyPath() {
  return [
    reply().toolCall("apply_patch", patch(CLAIM)),
    reply().text('{"type": "verification_request", "claim_path": "memory/claims/answer.json"}'),
    reply().text('{"verdict": "pass", "reasons": ["holds 42"]}'),
    reply().toolCall("exec_command", { cmd: DELIVER }),
    reply().text('{"type": "final_delivery", "deliverable_path": "deliverable", "summary": "42"}'),
    reply().text('{"verdict": "pass", "reasons": ["deliverable checked"]}'),
  ];
}

async function assertVerified(t: Awaited<ReturnType<typeof setup>>, r: Awaited<ReturnType<typeof runInfty>>) {
  assert.ok("ok" in r, JSON.stringify(r));
  assert.equal(r.ok.status, "complete", r.ok.detail);
  assert.equal(readFileSync(path.join(r.ok.deliverable!, "answer.txt"), "utf8"), "42\n");
  assert.equal(t.server.queued, 0, "every scripted reply was used");
}

describe("infty with sloppy models", () => {
  test("fences in prose, a commentary item before the JSON item, a question in prose, extra and null fields, upper-case enums", async () => {
    await using t = await setup();
    t.server.enqueue(
      reply().toolCall("apply_patch", patch(CLAIM)),
      reply().text("Before I go on: which format should the answer have, plain text or JSON?"),
      reply().text('Sure! {"directive": "Plain text.", "rationale": null, "confidence": 0.8}'),
      reply()
        .message("I wrote the answer and a claim; here is my request.")
        .message(
          '```json\n{"type": "Verification_Request", "claim_path": "memory/claims/answer.json", "notes": null, "prompt": null, "deliverable_path": null, "summary": null}\n```',
        ),
      reply().text(
        'I checked it myself.\n{"verdict": "PASS", "reasons": "answer.txt holds 42", "suggestions": null, "score": 10}',
      ),
      reply().toolCall("exec_command", { cmd: DELIVER }),
      reply().text(
        'All done. Here is the delivery:\n```JSON\n{"type": "FINAL_DELIVERY", "deliverable_path": "deliverable", "summary": "42", "prompt": null, "claim_path": null, "notes": null}\n```',
      ),
      reply().text('{"verdict": "Pass", "reasons": ["README\'s check run: 42"], "suggestions": []}'),
    );
    const r = await t.run("s-prose");
    await assertVerified(t, r);
    assert.match(lastUser(t.server, 2), /asked this in prose[\s\S]*plain text or JSON\?/);
    assert.match(lastUser(t.server, 3), /"directive": "Plain text\."/);
    // every turn asked for strict structured output with its role's schema
    const names = { solver: "solver_signal", director: "directive", verifier: "verdict" } as Record<string, string>;
    for (const req of t.server.requests) {
      const format = req.body.text?.format;
      assert.equal(format?.type, "json_schema");
      assert.equal(format?.strict, true);
      assert.equal(format?.name, names[roleOf(req)], `request for the ${roleOf(req)}`);
      assert.equal(format?.schema?.additionalProperties, false);
    }
    assert.ok(
      !t.events.some((e) => e.type === "warning"),
      JSON.stringify(t.events.filter((e) => e.type === "warning")),
    );
  });

  test("a server that refuses structured output (Chat Completions): each role falls back once, says so, and the run ends verified", async () => {
    await using t = await setup("openai-chat");
    const error = httpError(400, {
      error: {
        message: "Unrecognized request argument supplied: response_format",
        type: "invalid_request_error",
        code: null,
      },
    });
    t.server.refuse((r) => r.body.response_format !== undefined, error);
    t.server.enqueue(
      reply().toolCall("apply_patch", patch(CLAIM)),
      reply().text('{"type": "direction_request", "prompt": "Plain or JSON?"}'),
      reply().text('{"directive": "Plain."}'),
      reply().text('{"type": "verification_request", "claim_path": "memory/claims/answer.json"}'),
      reply().text('{"verdict": "pass", "reasons": ["holds 42"]}'),
      reply().toolCall("exec_command", { cmd: DELIVER }),
      reply().text('{"type": "final_delivery", "deliverable_path": "deliverable", "summary": "42"}'),
      reply().text('{"verdict": "pass", "reasons": ["deliverable checked"]}'),
    );
    const r = await t.run("s-refuse");
    await assertVerified(t, r);
    const warnings = t.events.filter(
      (e): e is Extract<InftyEvent, { type: "warning" }> =>
        e.type === "warning" && /refused structured output/.test(e.message),
    );
    assert.deepEqual(
      warnings.map((w) => /for the (\S+)/.exec(w.message)![1]).sort(),
      ["director", "solver", "verifier-1"],
      "said once per role",
    );
    assert.match(warnings[0]!.message, /Unrecognized request argument supplied: response_format/);
    const refused = t.server.requests.filter((q) => q.body.response_format !== undefined);
    assert.equal(refused.length, 3, "one refused request per role, none after the fallback");
    const store = await RunStore.load(t.home, "s-refuse");
    assert.ok("ok" in store);
    assert.deepEqual([...store.ok.state.prompt_only_roles].sort(), ["director", "solver", "verifier-1"]);
    const log = readFileSync(path.join(store.ok.dir, "events.jsonl"), "utf8");
    assert.equal(log.match(/"type":"structured_output_unsupported"/g)?.length, 3);
  });

  test("a Solver that never sends a signal is told what is missing, and the run's end says so, not only 'raise --max-turns'", async () => {
    await using t = await setup();
    t.server.enqueue(
      reply().text("Working on it."),
      reply().text("Still working on it."),
      reply().text('Nearly there: {"progress": 90}'),
    );
    const r = await t.run("s-silent", { maxTurns: 3, maxNudges: 5 });
    assert.ok("ok" in r);
    assert.equal(r.ok.status, "budget_exhausted");
    assert.match(
      r.ok.detail,
      /the Solver sent no usable signal in its last 3 turns \(last problem: your JSON object does not match the contract \(type: .*\)\)/,
    );
    assert.match(
      lastUser(t.server, 1),
      /Your last reply could not be used: your reply had no JSON object\. .*ONE JSON object and nothing else, matching: \{"type": "direction_request"/,
    );
  });

  test("a claim that is a symlink to /etc/passwd, or cites evidence outside the store, never reaches a Verifier; the Solver is told and recovers", async () => {
    await using t = await setup();
    const good =
      '{"claim": "artifacts/answer.txt holds 42", "evidence": ["artifacts/answer.txt", "cat artifacts/answer.txt"]}';
    t.server.enqueue(
      reply().toolCall("exec_command", {
        cmd: "mkdir -p memory/claims artifacts && echo 42 > artifacts/answer.txt && ln -s /etc/passwd memory/claims/evil.json",
      }),
      reply().text('{"type": "verification_request", "claim_path": "memory/claims/evil.json"}'),
      reply().toolCall(
        "apply_patch",
        patch({ "memory/claims/cites.json": '{"claim": "x", "evidence": ["artifacts/answer.txt", "/etc/passwd"]}' }),
      ),
      reply().text('{"type": "verification_request", "claim_path": "memory/claims/cites.json"}'),
      reply().toolCall("apply_patch", patch({ "memory/claims/good.json": good })),
      reply().text('{"type": "verification_request", "claim_path": "memory/claims/good.json"}'),
      reply().text('{"verdict": "pass", "reasons": ["holds 42"]}'),
      reply().toolCall("exec_command", { cmd: DELIVER }),
      reply().text('{"type": "final_delivery", "deliverable_path": "deliverable", "summary": "42"}'),
      reply().text('{"verdict": "pass", "reasons": ["deliverable checked"]}'),
    );
    const r = await t.run("s-escape");
    await assertVerified(t, r);
    assert.match(
      lastUser(t.server, 2),
      /"overall":"fail".*memory\/claims\/evil\.json leads outside the run store through a symlink \(to \/etc\/passwd\)/,
    );
    assert.match(lastUser(t.server, 4), /"overall":"fail".*evidence \/etc\/passwd is outside the run store/);
    const claimsIndex = JSON.stringify(await readClaimsIndex(path.join(t.home, "infty", "s-escape")));
    assert.match(claimsIndex, /memory\/claims\/evil\.json/, "the refused claim is in the index");
    assert.ok(
      !claimsIndex.includes(readFileSync("/etc/passwd", "utf8").slice(0, 20)),
      "but nothing of the file it links to",
    );
    const verifierRequests = t.server.requests
      .filter((q) => roleOf(q) === "verifier")
      .map((q) => JSON.stringify(q.body));
    assert.equal(verifierRequests.length, 2, "the good claim and the deliverable were verified, nothing else");
    assert.ok(verifierRequests.every((b) => !/evil\.json|cites\.json/.test(b)));
    assert.match(verifierRequests[0]!, /good\.json/);
    assert.match(verifierRequests[1]!, /This is the final deliverable/);
  });

  test("a deliverable whose manifest lists a symlink out of it is rejected; an unlisted symlink is reported", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-deliverable-"));
    try {
      symlinkSync("/etc/passwd", path.join(dir, "passwd"));
      const readme = (files: string) => `# x\n## Manifest\n${files}\n## How to verify\nread\n## Limitations\nnone\n`;
      writeFileSync(path.join(dir, "README.md"), readme(`- passwd (${statSync("/etc/passwd").size} bytes)`));
      const listed = await checkDeliverable(dir);
      assert.ok(
        "error" in listed && /passwd leads outside the deliverable through a symlink/.test(listed.error.message),
        JSON.stringify(listed),
      );
      mkdirSync(path.join(dir, "a"));
      writeFileSync(path.join(dir, "a", "x.txt"), "x");
      writeFileSync(path.join(dir, "README.md"), readme("- a/x.txt (1 bytes)"));
      const unlisted = await checkDeliverable(dir);
      assert.ok(
        "error" in unlisted && /passwd is in the deliverable but not in the manifest/.test(unlisted.error.message),
        JSON.stringify(unlisted),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("Verifiers are asked in parallel; a passing one is replaced by a fresh session, a failing one keeps its context; the deliverable gets its own round", async () => {
    await using t = await setup();
    let secondAsked!: () => void;
    const bothAsked = new Promise<void>((r) => (secondAsked = r));
    const verdict = (v: string, why: string) =>
      reply().text(JSON.stringify({ verdict: v, reasons: [why], suggestions: [] }));
    t.server
      .route(
        (r) => roleName(r) === "verifier-1",
        later(bothAsked.then(() => verdict("pass", "looks right"))),
        verdict("pass", "still right"),
        verdict("fail", "README lies"),
        verdict("pass", "README fixed"),
      )
      .route(
        (r) => roleName(r) === "verifier-2" && (secondAsked(), true),
        verdict("fail", "no test"),
        verdict("pass", "test added"),
        verdict("pass", "deliverable ok"),
        verdict("pass", "still ok"),
      )
      .route(
        (r) => roleName(r) === "solver",
        reply().toolCall("apply_patch", patch(CLAIM)),
        reply().text('{"type": "verification_request", "claim_path": "memory/claims/answer.json"}'),
        reply().text(
          '{"type": "verification_request", "claim_path": "memory/claims/answer.json", "notes": "test added"}',
        ),
        reply().toolCall("exec_command", { cmd: DELIVER }),
        reply().text('{"type": "final_delivery", "deliverable_path": "deliverable", "summary": "42"}'),
        reply().text('{"type": "final_delivery", "deliverable_path": "deliverable", "summary": "42, README fixed"}'),
      );
    const rollouts: string[][] = [];
    const r = await t.run("s-pool", {
      verifiers: 2,
      report: (e) => {
        t.events.push(e);
        if (e.type === "verification_summary") rollouts.push(readRollouts(t.home, "s-pool"));
      },
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.status, "complete", r.ok.detail);
    assert.deepEqual(
      t.events
        .filter((e) => e.type === "verification_summary")
        .map((e) => e.type === "verification_summary" && `${e.overall} ${e.passes}/${e.total}`),
      ["fail 1/2", "pass 2/2", "fail 1/2", "pass 2/2"],
    );
    const asked = (role: string) => t.server.requests.filter((q) => roleName(q) === role);
    // A pass gives a fresh session next round (one request seen), a fail keeps the session (two seen):
    // verifier-1 passes, passes, fails the deliverable, then re-checks it in the same session.
    assert.deepEqual(asked("verifier-1").map(requestsSeen), [1, 1, 1, 2]);
    assert.deepEqual(asked("verifier-2").map(requestsSeen), [1, 2, 1, 1]);
    assert.match(
      lastUser(t.server, t.server.requests.indexOf(asked("solver")[5]!)),
      /did not accept the deliverable[\s\S]*final_delivery/,
    );
    assert.match(JSON.stringify(asked("verifier-1")[2]!.body), /This is the final deliverable/);
    assert.notEqual(rollouts[0]![1], rollouts[1]![1], "verifier-1 got a new session after passing");
    assert.equal(rollouts[0]![2], rollouts[1]![2], "verifier-2 kept its session after failing");
  });

  test("a stream that stalls half way is sent again and the run goes on", async () => {
    await using t = await setup();
    t.config = { ...t.config, stream_idle_timeout_ms: 300 };
    t.server.enqueue(reply().text("This answer stalls half way").hangAfter(3), ...happyPath());
    const r = await t.run("s-stall");
    await assertVerified(t, r);
    assert.deepEqual(
      t.server.requests[1]!.body.input,
      t.server.requests[0]!.body.input,
      "the stalled request was sent again as it was",
    );
  });

  test("a Verifier that never answers counts as a fail at its timeout; the Solver is told and the Verifier is asked again", async () => {
    await using t = await setup();
    const [work, ask, pass, ...rest] = happyPath();
    t.server.enqueue(
      work!,
      ask!,
      hang(),
      reply().text('{"type": "verification_request", "claim_path": "memory/claims/answer.json", "notes": "again"}'),
      pass!,
      ...rest,
    );
    const r = await t.run("s-slow", { roleTimeoutMs: 1500 });
    await assertVerified(t, r);
    assert.ok(
      t.events.some(
        (e) =>
          e.type === "warning" &&
          /the verifier-1 gave no usable verdict: verifier-1 gave no answer within 1500 ms; counted as a fail/.test(
            e.message,
          ),
      ),
      JSON.stringify(t.events.filter((e) => e.type === "warning")),
    );
    assert.match(lastUser(t.server, 3), /"overall": "fail"[\s\S]*gave no answer within 1500 ms/);
  });

  test("--no-structured-output: no role is asked for a schema, from the first request on", async () => {
    await using t = await setup();
    t.server.enqueue(...happyPath());
    const r = await t.run("s-off", { structuredOutput: false });
    await assertVerified(t, r);
    assert.ok(
      t.server.requests.every((q) => q.body.text === undefined),
      "no request carried text.format",
    );
    const store = await RunStore.load(t.home, "s-off");
    assert.ok("ok" in store);
    assert.deepEqual(store.ok.state.prompt_only_roles, ["solver", "director", "verifier-1"]);
  });
});

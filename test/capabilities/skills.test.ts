/**
 * Skills in a session, through real executors and the fake model server: roots on a second
 * environment (an executor started over a pipe, in its own cwd), the bounded catalog and body,
 * the `skill` tool, local skills and their collisions, hidden skills, an environment that does
 * not start.
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { SessionEnvironments } from "../../src/capabilities/environments.ts";
import { SKILL_ENTRY_MAX_BYTES, SKILLS_CATALOG_MAX_BYTES } from "../../src/capabilities/skill-catalog.ts";
import { readSkillBody } from "../../src/capabilities/skill-sources.ts";
import { capabilityRoot } from "../../src/config/capability-root.ts";
import { SKILL_BODY_MAX_BYTES } from "../../src/contracts/skills.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { ENV_ROOT, envDir, executorIn, writeSkill } from "../support/skills.ts";

const linuxOnly = { skip: process.platform !== "linux" && "a root at /proc/self/cwd needs Linux's /proc" };

/** The developer instructions of a recorded request. */
const instructionsOf = (body: unknown): string => JSON.stringify(inputOf(body)[0]);
const toolNames = (body: unknown): string[] =>
  ((body as { tools?: Array<{ name?: string }> }).tools ?? []).map((t) => t.name ?? "");
const callOutput = (body: unknown, callId: string): string =>
  String(inputOf(body).find((i) => i.type === "function_call_output" && i.call_id === callId)?.output ?? "");

describe("skills on environments", () => {
  test(
    "a root on a second environment lists its skills and the skill tool reads one through that executor",
    linuxOnly,
    async () => {
      await using h = await harness();
      const env = envDir();
      try {
        writeSkill(env.skills, "deploy", {
          description: "How to deploy this service",
          body: "ENV-DEPLOY-BODY: run ./deploy.sh --prod\n",
        });
        h.server.enqueue(
          reply().toolCall("skill", { name: "deploy" }, { callId: "call_skill" }),
          reply().text("deployed"),
        );
        const r = await h.run({
          prompt: "deploy it",
          environments: [{ name: "build", command: executorIn(env.dir) }],
          // The same path on the session's own executor does not exist: the read happened on "build".
          capabilityRoots: [capabilityRoot("build", ENV_ROOT, "deploy@1"), capabilityRoot("local", ENV_ROOT)],
        });
        assert.ok("ok" in r, JSON.stringify(r));
        const [first, second] = h.server.requests;
        assert.ok(toolNames(first!.body).includes("skill"), toolNames(first!.body).join(", "));
        assert.match(
          instructionsOf(first!.body),
          /## Skills.*- deploy: How to deploy this service \(environment build, root deploy@1\)/,
        );
        assert.doesNotMatch(instructionsOf(first!.body), /ENV-DEPLOY-BODY/, "bodies are read on demand only");
        const out = callOutput(second!.body, "call_skill");
        assert.match(
          out,
          /^<skill name="deploy" environment="build" root="deploy@1" path="\/proc\/self\/cwd\/env-skills\/deploy\/SKILL.md">\nENV-DEPLOY-BODY/,
        );
        assert.ok(
          h.events.some(
            (e) =>
              e.type === "warning" &&
              /capability root local:\/proc\/self\/cwd\/env-skills on environment local: unavailable/.test(e.message),
          ),
        );
      } finally {
        rmSync(env.dir, { recursive: true, force: true });
      }
    },
  );

  test("a 200 KB SKILL.md: a bounded catalog entry, a bounded body with a note, and the rest by offset", async () => {
    await using h = await harness();
    const root = path.join(h.workspace, "skills");
    const lines = Array.from({ length: 8000 }, (_, i) => `line ${String(i).padStart(5, "0")} of the big skill\n`).join(
      "",
    );
    writeSkill(root, "big", { description: `very long ${"d".repeat(5000)}`, body: lines });
    for (let i = 0; i < 60; i++)
      writeSkill(root, `extra-${String(i).padStart(2, "0")}`, { description: `filler ${"x".repeat(300)}` });
    h.server.enqueue(
      reply().toolCall("skill", { name: "big", offset: 32768 }, { callId: "call_more" }),
      reply().text("read"),
    );
    const r = await h.run({ prompt: "use $big", capabilityRoots: [capabilityRoot("local", root)] });
    assert.ok("ok" in r, JSON.stringify(r));
    const [first, second] = h.server.requests;
    const instructions = JSON.parse(instructionsOf(first!.body)) as { content: Array<{ text: string }> };
    const catalog = instructions.content
      .map((c) => c.text)
      .join("")
      .split("## Skills")[1]!;
    assert.ok(
      Buffer.byteLength(`## Skills${catalog}`) <= SKILLS_CATALOG_MAX_BYTES,
      `catalog is ${Buffer.byteLength(catalog)} bytes`,
    );
    const entry = catalog.split("\n").find((l) => l.startsWith("- big:"))!;
    assert.ok(Buffer.byteLength(entry) < SKILL_ENTRY_MAX_BYTES, `entry is ${Buffer.byteLength(entry)} bytes`);
    assert.match(entry, /d…/);
    assert.match(catalog, /- … \d+ more skills not listed \(the catalog is limited to 8192 bytes\)/);
    const texts = inputOf(first!.body).flatMap((i) =>
      Array.isArray(i.content) ? i.content.map((c: { text?: string }) => c.text ?? "") : [],
    );
    const injected = texts.find((t) => t.startsWith('<skill name="big"'))!;
    assert.ok(
      Buffer.byteLength(injected) < SKILL_BODY_MAX_BYTES + 512,
      `the injected body is ${Buffer.byteLength(injected)} bytes`,
    );
    assert.match(injected, /line 00000 of the big skill/);
    assert.match(
      injected,
      /skill big truncated: this is bytes 0-\d+ of its 2\d{5}-byte instructions. Read on with the skill tool \{"name": "big", "offset": \d+\}; the file is .*big\/SKILL.md on environment local/,
    );
    const more = callOutput(second!.body, "call_more");
    assert.ok(
      Buffer.byteLength(more) < SKILL_BODY_MAX_BYTES + 512,
      `the second slice is ${Buffer.byteLength(more)} bytes`,
    );
    assert.match(more, /^<skill name="big" environment="local" root="local:[^"]+" path="[^"]+" offset="32768">\n/);
    assert.match(more, /"offset": 65536\}/);
  });

  test("a local skill and an executor's skill of the same name: the executor's wins, the local one is neither listed nor read", async () => {
    await using h = await harness();
    writeSkill(path.join(h.home, "skills"), "deploy", { description: "LOCAL description", body: "LOCAL-BODY\n" });
    writeSkill(path.join(h.home, "skills"), "notes", { description: "Take notes", body: "NOTES-BODY\n" });
    mkdirSync(path.join(h.workspace, ".git"));
    writeSkill(path.join(h.workspace, ".relay", "skills"), "review", {
      description: "Review a change",
      body: "REVIEW-BODY\n",
    });
    const root = path.join(h.workspace, "exec-skills");
    writeSkill(root, "deploy", { description: "EXECUTOR description", body: "EXECUTOR-BODY\n" });
    h.server.enqueue(reply().toolCall("skill", { name: "review" }, { callId: "call_review" }), reply().text("ok"));
    const r = await h.run({ prompt: "use $deploy and $notes.", capabilityRoots: [capabilityRoot("local", root)] });
    assert.ok("ok" in r, JSON.stringify(r));
    const [first, second] = h.server.requests;
    const all = JSON.stringify(inputOf(second!.body));
    assert.match(all, /- deploy: EXECUTOR description \(environment local/);
    assert.match(all, /- notes: Take notes \(local\)/);
    assert.match(all, /- review: Review a change \(local\)/);
    assert.match(all, /EXECUTOR-BODY/);
    assert.match(all, /NOTES-BODY/, "a local skill is read here with $name");
    assert.doesNotMatch(all, /LOCAL-BODY|LOCAL description/);
    assert.match(
      callOutput(second!.body, "call_review"),
      /^<skill name="review" source="local" path="[^"]+\.relay\/skills\/review\/SKILL.md">\nREVIEW-BODY/,
    );
    assert.ok(first);
  });

  test("an environment that does not start: a warning naming it and the fix, nothing from its roots, no local fallback", async () => {
    await using h = await harness();
    // The root's path exists on this host: a fallback to the local filesystem would find its skill.
    const root = path.join(h.workspace, "skills");
    writeSkill(root, "deploy", { body: "MUST-NOT-APPEAR\n" });
    h.server.enqueue(reply().text("fine"));
    const r = await h.run({
      prompt: "use $deploy",
      environments: [{ name: "gone", command: "/nonexistent/relay executor" }],
      capabilityRoots: [capabilityRoot("gone", root)],
    });
    assert.ok("ok" in r, JSON.stringify(r));
    const warnings = h.events.flatMap((e) => (e.type === "warning" ? [e.message] : []));
    assert.ok(
      warnings.some((w) =>
        /environment "gone" \(\/nonexistent\/relay executor\) did not start: .*relay executor --check --executor '\/nonexistent\/relay executor'.*its capability roots give nothing/.test(
          w,
        ),
      ),
      warnings.join("\n"),
    );
    assert.ok(
      warnings.some((w) => /capability root gone:.* skipped: .*never read from the local filesystem/.test(w)),
      warnings.join("\n"),
    );
    const body = JSON.stringify(h.server.requests[0]!.body);
    assert.doesNotMatch(body, /MUST-NOT-APPEAR|## Skills/);
    assert.ok(!toolNames(h.server.requests[0]!.body).includes("skill"), "no skills, no skill tool");
  });

  test("a hidden skill is not listed, but the skill tool and $name read it", async () => {
    await using h = await harness();
    const root = path.join(h.workspace, "skills");
    writeSkill(root, "secret-sauce", { hidden: true, description: "HIDDEN-DESCRIPTION", body: "HIDDEN-BODY\n" });
    writeSkill(root, "shown", { description: "A listed one" });
    h.server.enqueue(
      reply().toolCall("skill", { name: "secret-sauce" }, { callId: "call_hidden" }),
      reply().text("ok"),
    );
    const r = await h.run({ prompt: "go", capabilityRoots: [capabilityRoot("local", root)] });
    assert.ok("ok" in r, JSON.stringify(r));
    const [first, second] = h.server.requests;
    assert.match(instructionsOf(first!.body), /- shown: A listed one/);
    assert.doesNotMatch(instructionsOf(first!.body), /secret-sauce|HIDDEN-DESCRIPTION/);
    assert.match(callOutput(second!.body, "call_hidden"), /HIDDEN-BODY/);
    h.server.enqueue(reply().text("again"));
    const byName = await h.run({ prompt: "use $secret-sauce", capabilityRoots: [capabilityRoot("local", root)] });
    assert.ok("ok" in byName);
    assert.match(JSON.stringify(inputOf(h.server.requests[2]!.body)), /HIDDEN-BODY/);
  });

  test("code mode offers the skill tool as tools.skill", async () => {
    await using h = await harness();
    const root = path.join(h.workspace, "skills");
    writeSkill(root, "deploy", { body: "CODE-MODE-BODY\n" });
    h.server.enqueue(
      reply().customToolCall(
        "exec",
        'text(ALL_TOOLS.map((t) => t.name).join(",")); text(await tools.skill({ name: "deploy" }))',
        { callId: "call_js" },
      ),
      reply().text("ok"),
    );
    const r = await h.run({ prompt: "go", codeMode: true, capabilityRoots: [capabilityRoot("local", root)] });
    assert.ok("ok" in r, JSON.stringify(r));
    const out = String(
      inputOf(h.server.requests[1]!.body).find((i) => i.call_id === "call_js" && i.type === "custom_tool_call_output")
        ?.output,
    );
    assert.match(out, /\bskill\b/);
    assert.match(out, /<skill name="deploy"[^>]*>\nCODE-MODE-BODY/);
  });

  test("an executor older than body slices sends the whole body: it is cut here, by offset", async () => {
    const whole = "x".repeat(100_000);
    const old = { call: async () => ({ ok: { body: whole, bytes: 100_050 } }) };
    const envs = new SessionEnvironments([], [{ id: "old", peer: old as never, info: {} as never }], new Map());
    const skill = {
      name: "s",
      description: "d",
      path: "/s/SKILL.md",
      hidden: false,
      source: { kind: "environment" as const, environmentId: "old", rootId: "r" },
    };
    const first = await readSkillBody(skill, envs);
    assert.ok("ok" in first);
    assert.equal(first.ok.body.length, SKILL_BODY_MAX_BYTES);
    assert.equal(first.ok.next_offset, SKILL_BODY_MAX_BYTES);
    const last = await readSkillBody(skill, envs, 3 * SKILL_BODY_MAX_BYTES);
    assert.ok("ok" in last);
    assert.equal(last.ok.body.length, 100_000 - 3 * SKILL_BODY_MAX_BYTES);
    assert.equal(last.ok.next_offset, undefined);
  });

  test("an old executor's body cut inside a character is cut before it, and one ending in U+FFFD is read to its end", async () => {
    // "é" is 2 bytes: at an odd length the slice would end inside one.
    const whole = `${"x".repeat(SKILL_BODY_MAX_BYTES - 1)}é tail \uFFFD`;
    const old = { call: async () => ({ ok: { body: whole, bytes: Buffer.byteLength(whole) } }) };
    const envs = new SessionEnvironments([], [{ id: "old", peer: old as never, info: {} as never }], new Map());
    const skill = {
      name: "s",
      description: "d",
      path: "/s/SKILL.md",
      hidden: false,
      source: { kind: "environment" as const, environmentId: "old", rootId: "r" },
    };
    const first = await readSkillBody(skill, envs);
    assert.ok("ok" in first);
    assert.equal(first.ok.next_offset, SKILL_BODY_MAX_BYTES - 1, "the slice stops before the split character");
    const rest = await readSkillBody(skill, envs, first.ok.next_offset);
    assert.ok("ok" in rest);
    assert.equal(rest.ok.body, "é tail \uFFFD", "the last slice keeps its real U+FFFD");
    assert.equal(rest.ok.next_offset, undefined, "and says there is nothing more to read");
  });
});

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { isContextMessage, projectDocMessage } from "../../src/model/context-fragments.ts";
import { userMessage } from "../../src/model/items.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { buildCompactedHistory } from "../../src/session/compaction.ts";
import { readProjectDocs } from "../../src/workspace/project-docs.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";

/** A repository root with a nested cwd: root/.git, root/AGENTS.md, root/pkg/sub (cwd). */
function repo(): { root: string; cwd: string; [Symbol.dispose](): void } {
  const root = mkdtempSync(path.join(os.tmpdir(), "relay-docs-"));
  mkdirSync(path.join(root, ".git"));
  const cwd = path.join(root, "pkg", "sub");
  mkdirSync(cwd, { recursive: true });
  return { root, cwd, [Symbol.dispose]: () => rmSync(root, { recursive: true, force: true }) };
}

const NAMES = ["AGENTS.override.md", "AGENTS.md"];

describe("project instructions (AGENTS.md)", () => {
  test("one file per directory from the repository root down to cwd, root first; the override wins", async () => {
    using r = repo();
    writeFileSync(path.join(r.root, "AGENTS.md"), "root rules\n");
    writeFileSync(path.join(r.root, "pkg", "AGENTS.md"), "pkg rules\n");
    writeFileSync(path.join(r.cwd, "AGENTS.md"), "sub rules (shadowed)\n");
    writeFileSync(path.join(r.cwd, "AGENTS.override.md"), "sub override\n");
    const got = await readProjectDocs(r.cwd, NAMES, 32_768);
    assert.equal(got.root, r.root);
    assert.deepEqual(
      got.docs.map((d) => [path.relative(r.root, d.path), d.text.trim()]),
      [
        ["AGENTS.md", "root rules"],
        ["pkg/AGENTS.md", "pkg rules"],
        ["pkg/sub/AGENTS.override.md", "sub override"],
      ],
    );
    assert.deepEqual(got.warnings, []);
  });

  test("outside a repository only cwd is read; empty files are skipped; a symlink to a file counts", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-docs-norepo-"));
    try {
      const cwd = path.join(dir, "work");
      mkdirSync(cwd);
      writeFileSync(path.join(dir, "AGENTS.md"), "parent, not a repo root\n");
      writeFileSync(path.join(cwd, "AGENTS.override.md"), "  \n");
      writeFileSync(path.join(dir, "real.md"), "linked rules\n");
      symlinkSync(path.join(dir, "real.md"), path.join(cwd, "AGENTS.md"));
      const got = await readProjectDocs(cwd, NAMES, 32_768);
      assert.equal(got.root, null);
      // The blank override is the first match in cwd, so it is taken and skipped as empty.
      assert.deepEqual(got.docs, []);
      rmSync(path.join(cwd, "AGENTS.override.md"));
      const again = await readProjectDocs(cwd, NAMES, 32_768);
      assert.deepEqual(
        again.docs.map((d) => d.text),
        ["linked rules\n"],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the byte budget cuts the file that crosses it on a character boundary and skips the rest, saying so", async () => {
    using r = repo();
    writeFileSync(path.join(r.root, "AGENTS.md"), "é".repeat(10)); // 20 bytes
    writeFileSync(path.join(r.cwd, "AGENTS.md"), "never reached");
    const got = await readProjectDocs(r.cwd, NAMES, 15);
    assert.equal(got.docs.length, 1);
    assert.equal(got.docs[0]!.text, "é".repeat(7), "14 bytes: the 8th character would be split");
    assert.equal(got.docs[0]!.truncated, true);
    assert.equal(got.docs[0]!.bytes, 20);
    assert.equal(got.warnings.length, 2);
    assert.match(got.warnings[0]!, /only the first 14 fit in project_doc_max_bytes \(15\)/);
    assert.match(got.warnings[1]!, /pkg\/sub\/AGENTS\.md skipped: project_doc_max_bytes \(15\) is used up/);
    assert.deepEqual((await readProjectDocs(r.cwd, NAMES, 0)).docs, [], "0 turns them off");
  });

  test("a new session gets global then project instructions as its first user message, once; the header names the files", async () => {
    await using h = await harness();
    mkdirSync(path.join(h.workspace, ".git"));
    writeFileSync(path.join(h.home, "AGENTS.md"), "GLOBAL: answer in English\n");
    writeFileSync(path.join(h.workspace, "AGENTS.md"), "PROJECT: run npm test before finishing\n");
    h.server.enqueue(reply().text("first"), reply().text("second"));
    const r = await h.run({ prompt: "hello" });
    assert.ok("ok" in r, JSON.stringify(r));
    const input = inputOf(h.server.requests[0]!.body);
    const texts = input.filter((i) => i.role === "user").map((i) => JSON.stringify(i.content));
    assert.equal(texts.length, 2);
    assert.match(texts[0]!, new RegExp(`# AGENTS.md instructions for ${h.workspace.replace(/[/.]/g, "\\$&")}`));
    assert.match(
      texts[0]!,
      /GLOBAL: answer in English\\n\\n--- project-doc ---\\n\\nPROJECT: run npm test before finishing\\n<\/INSTRUCTIONS>/,
    );
    assert.match(texts[1]!, /hello/);
    const header = h.events.find((e) => e.type === "project_docs");
    assert.deepEqual(header && "files" in header ? header.files.map((f) => f.path) : [], [
      path.join(h.home, "AGENTS.md"),
      path.join(h.workspace, "AGENTS.md"),
    ]);

    // Resumed: the instructions are in history already and are not added again.
    const resumed = await h.run({ prompt: "again", resume: r.ok.sessionId });
    assert.ok("ok" in resumed, JSON.stringify(resumed));
    const second = inputOf(h.server.requests[1]!.body)
      .filter((i) => i.role === "user")
      .map((i) => JSON.stringify(i.content));
    assert.equal(second.filter((t) => t.includes("# AGENTS.md instructions for")).length, 1);
    const saved = await readRollout(r.ok.rolloutPath);
    assert.ok("ok" in saved);
    assert.equal(saved.ok.items.filter(isContextMessage).length, 1);
  });

  test("no AGENTS.md anywhere: no message and no header; project_doc_max_bytes = 0 leaves the workspace's out", async () => {
    await using h = await harness();
    h.server.enqueue(reply().text("a"), reply().text("b"));
    const plain = await h.run({ prompt: "hi" });
    assert.ok("ok" in plain);
    assert.equal(inputOf(h.server.requests[0]!.body).filter((i) => i.role === "user").length, 1);
    assert.ok(!h.events.some((e) => e.type === "project_docs"));
    writeFileSync(path.join(h.workspace, "AGENTS.md"), "ignored when off\n");
    const off = await h.run({ prompt: "hi", config: h.config({ project_doc_max_bytes: 0 }) });
    assert.ok("ok" in off);
    assert.ok(!JSON.stringify(h.server.requests[1]!.body).includes("ignored when off"));
  });

  test("compaction keeps the instructions first and does not count them as a user request", () => {
    const docs = projectDocMessage("/w", "rules");
    const history = [docs, userMessage("task one"), userMessage("task two")];
    const next = buildCompactedHistory(history, "summary text");
    assert.deepEqual(next[0], docs);
    assert.equal(next.filter(isContextMessage).length, 1);
    assert.match(JSON.stringify(next.at(-1)), /task two/);
  });
});

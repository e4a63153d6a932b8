/**
 * Both ways with a real Codex CLI (the `@openai/codex` npm package) against the fake model
 * server: Codex resumes a session Relay wrote, and Relay resumes a session Codex wrote while
 * Codex can still resume it afterwards. Optional: it runs where `RELAY_TEST_CODEX` names a codex
 * binary or `codex` is on PATH (CI installs @openai/codex@0.171.0 for it), and says why it
 * skipped otherwise.
 *
 * Codex is pointed at the fake server through a custom provider ("fake": no WebSocket attempt,
 * which the built-in `openai` provider makes first), and Relay records that id in its rollouts
 * with `codex_provider_id`, as a user with a custom Codex provider would configure it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { readRollout } from "../../src/rollout/reader.ts";
import { findCodex, writeCodexConfig } from "../support/codex-cli.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const codex = findCodex();
const skip = skipBecause("the real-Codex round trip", "missing" in codex && codex.missing);

const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

interface Homes extends AsyncDisposable {
  root: string;
  codexHome: string;
  relayHome: string;
  workspace: string;
  server: FakeModelServer;
  relay(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }>;
  codex(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }>;
}

async function homes(): Promise<Homes> {
  useTestRelay();
  const root = mkdtempSync(path.join(os.tmpdir(), "relay-codex-real-"));
  const codexHome = path.join(root, "codex-home");
  const relayHome = path.join(root, "relay-home");
  const workspace = path.join(root, "ws");
  for (const d of [codexHome, relayHome, workspace]) mkdirSync(d);
  const server = await startFakeModelServer();
  writeFileSync(path.join(relayHome, "config.toml"), `codex_provider_id = "fake"\n`);
  writeCodexConfig(codexHome, server.baseUrl);
  // Nothing from the developer's own homes: HOME is the temp root, network only to loopback.
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: root,
    RELAY_HOME: relayHome,
    CODEX_HOME: codexHome,
    FAKE_KEY: "x",
    NO_COLOR: "1",
    RELAY_SELF_COMMAND: process.env.RELAY_SELF_COMMAND ?? "",
  };
  const run = (bin: string, args: string[]) => {
    const child = spawn(bin, args, { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
      child.once("close", (status) => resolve({ status, stdout, stderr })),
    );
  };
  return {
    root,
    codexHome,
    relayHome,
    workspace,
    server,
    relay: (args) => run(relayArgv()[0]!, [...relayArgv().slice(1), ...args]),
    codex: (args) => run((codex as { bin: string }).bin, args),
    async [Symbol.asyncDispose]() {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Every rollout file under a sessions tree. */
function rollouts(home: string): string[] {
  const dir = path.join(home, "sessions");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /rollout-.*\.jsonl$/.test(f))
    .map((f) => path.join(dir, f));
}

/** The text of every message a Responses request sent, in order. */
function sentTexts(body: Record<string, unknown>): string[] {
  const input = (body.input ?? []) as Array<{ type?: string; content?: Array<{ text?: string }> }>;
  return input.filter((i) => i.type === "message").flatMap((i) => (i.content ?? []).map((c) => c.text ?? ""));
}

const codexRequests = (server: FakeModelServer) =>
  server.requests.filter((r) => r.method === "POST" && r.path.endsWith("/responses"));

describe("with a real Codex CLI", { skip }, () => {
  test("Codex resumes a session Relay wrote, with its history", async () => {
    await using h = await homes();
    h.server.enqueue(reply().text("Relay remembers the word PELICAN."));
    const first = await h.relay([
      "run",
      "-m",
      "test-model",
      "--base-url",
      h.server.baseUrl,
      "--sandbox",
      "read-only",
      "Remember the word PELICAN.",
    ]);
    assert.equal(first.status, 0, first.stderr);
    const [relayFile] = rollouts(h.relayHome);
    assert.ok(relayFile, "relay wrote a rollout");
    const meta = await readRollout(relayFile);
    assert.ok("ok" in meta);
    assert.equal(meta.ok.meta.model_provider, "fake", "the Codex provider id from codex_provider_id");

    // Where `codex resume <id>` looks: $CODEX_HOME/sessions/YYYY/MM/DD/, under the same name.
    const placed = path.join(h.codexHome, path.relative(h.relayHome, relayFile));
    mkdirSync(path.dirname(placed), { recursive: true });
    copyFileSync(relayFile, placed);
    const relayBytes = readFileSync(placed, "utf8");

    h.server.enqueue(reply().text("The word was PELICAN."));
    const resumed = await h.codex(["exec", "--skip-git-repo-check", "resume", meta.ok.meta.id, "Which word?"]);
    assert.equal(resumed.status, 0, `codex exec resume failed:\n${resumed.stderr}`);
    const sent = codexRequests(h.server).at(-1);
    assert.ok(sent, "Codex sent a request to the fake server");
    const texts = sentTexts(sent.body);
    assert.ok(
      texts.some((t) => t.includes("Remember the word PELICAN.")),
      `Relay's user turn reached the model: ${JSON.stringify(texts)}`,
    );
    assert.ok(
      texts.some((t) => t.includes("Relay remembers the word PELICAN.")),
      "Relay's assistant turn reached the model",
    );
    assert.ok(texts.some((t) => t.includes("Which word?")));
    assert.match(resumed.stdout + resumed.stderr, /The word was PELICAN\./);
    const after = readFileSync(placed, "utf8");
    assert.ok(after.startsWith(relayBytes), "Codex appended to the Relay session and left Relay's lines as they were");
    assert.ok(after.length > relayBytes.length);
    assert.doesNotMatch(resumed.stderr, /parse error|failed to parse/i);

    // Back and forth: Relay continues the same file (it wrote it) over Codex's lines, then Codex again.
    h.server.enqueue(reply().text("Relay again: PELICAN."));
    const relayAgain = await h.relay([
      "run",
      "-m",
      "test-model",
      "--base-url",
      h.server.baseUrl,
      "--sandbox",
      "read-only",
      "--resume",
      placed,
      "Once more?",
    ]);
    assert.equal(relayAgain.status, 0, relayAgain.stderr);
    assert.doesNotMatch(relayAgain.stderr, /warning|skipped|corrupt/i, "Codex's lines read cleanly");
    const relayTexts = sentTexts(h.server.requests.at(-1)!.body);
    for (const t of ["Remember the word PELICAN.", "Which word?", "The word was PELICAN.", "Once more?"])
      assert.ok(
        relayTexts.some((s) => s.includes(t)),
        `${t} reached the model through Relay: ${JSON.stringify(relayTexts)}`,
      );
    h.server.enqueue(reply().text("Codex again: PELICAN."));
    const codexAgain = await h.codex(["exec", "--skip-git-repo-check", "resume", meta.ok.meta.id, "Last time?"]);
    assert.equal(codexAgain.status, 0, codexAgain.stderr);
    const lastTexts = sentTexts(codexRequests(h.server).at(-1)!.body);
    for (const t of ["Remember the word PELICAN.", "Once more?", "Relay again: PELICAN.", "Last time?"])
      assert.ok(
        lastTexts.some((s) => s.includes(t)),
        `${t} reached the model through Codex`,
      );
  });

  test("Relay resumes a session Codex wrote, and Codex can still resume it", async () => {
    await using h = await homes();
    h.server.enqueue(reply().text("Codex noted the colour TEAL."));
    const created = await h.codex(["exec", "--skip-git-repo-check", "Note the colour TEAL."]);
    assert.equal(created.status, 0, created.stderr);
    const [codexFile] = rollouts(h.codexHome);
    assert.ok(codexFile, "codex wrote a rollout");
    const id = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/.exec(codexFile)![1]!;
    const before = sha(codexFile);

    h.server.enqueue(reply().text("Relay sees TEAL."));
    const viaRelay = await h.relay([
      "run",
      "-m",
      "test-model",
      "--base-url",
      h.server.baseUrl,
      "--sandbox",
      "read-only",
      "--resume",
      codexFile,
      "Which colour?",
    ]);
    assert.equal(viaRelay.status, 0, viaRelay.stderr);
    assert.equal(sha(codexFile), before, "Relay left the Codex file byte-for-byte unchanged");
    const relaySent = h.server.requests.at(-1)!;
    const relayTexts = sentTexts(relaySent.body);
    assert.ok(
      relayTexts.some((t) => t.includes("Note the colour TEAL.")),
      `Codex's history reached the model through Relay: ${JSON.stringify(relayTexts)}`,
    );
    assert.ok(
      !relaySent.rawBody.includes("internal_chat_message_metadata_passthrough"),
      "no Codex-only field goes on the wire",
    );
    const [fork] = rollouts(h.relayHome);
    const forkMeta = await readRollout(fork!);
    assert.ok("ok" in forkMeta);
    assert.equal(forkMeta.ok.meta.forked_from_id, id);

    h.server.enqueue(reply().text("Still TEAL."));
    const again = await h.codex(["exec", "--skip-git-repo-check", "resume", id, "And now?"]);
    assert.equal(again.status, 0, `Codex could not resume its own session after Relay read it:\n${again.stderr}`);
    const texts = sentTexts(codexRequests(h.server).at(-1)!.body);
    assert.ok(texts.some((t) => t.includes("Note the colour TEAL.")));
    assert.ok(texts.some((t) => t.includes("And now?")));
  });
});

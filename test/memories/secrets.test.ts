/**
 * Secrets in sessions never reach the memory folder (contents, file names, git objects), the
 * state DB (rows and raw file bytes), the CLI's output, a model, or a later session's context.
 * The corpus is generated per run (test/memories/secret-corpus.ts); every case carries a tag
 * (`CASE017`) next to its secret, and the tags are checked to have arrived, so a case that never
 * reached the memories cannot pass by accident.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { inflateSync } from "node:zlib";
import { sql } from "kysely";
import { defaultConfig } from "../../src/config/config.ts";
import { agentConsolidator } from "../../src/memories/consolidate.ts";
import { type Extractor, heuristicExtractor, modelExtractor } from "../../src/memories/extract.ts";
import { runPhase1 } from "../../src/memories/phase1.ts";
import { runPhase2 } from "../../src/memories/phase2.ts";
import { memoryInstructions, sessionMemories, sessionMemoryBlock } from "../../src/memories/read.ts";
import type { StateDb } from "../../src/memories/store/db.ts";
import { listOutputs } from "../../src/memories/store/outputs.ts";
import { readPhase2Job } from "../../src/memories/store/phase2.ts";
import { readStage1Job } from "../../src/memories/store/stage1.ts";
import type { ModelClient, ModelRequest } from "../../src/model/client.ts";
import { createScriptedClient, type ScriptTurn } from "../../src/model/scripted.ts";
import { REDACTED } from "../../src/util/redact.ts";
import { err } from "../../src/util/result.ts";
import { harness } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { runRelayAsync, useTestRelay } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";
import { findLeaks, type Leak, type SecretCase, secretCorpus } from "./secret-corpus.ts";
import { HOUR, ok, openDb, sqliteSkip, tempHome, writeRollout } from "./support.ts";

interface Place {
  where: string;
  text: string;
}

const tag = (i: number) => `CASE${String(i).padStart(3, "0")}`;

/** The corpus, each case's text prefixed by its tag. */
function taggedCorpus(): Array<SecretCase & { tag: string }> {
  return secretCorpus().map((c, i) => ({ ...c, tag: tag(i), text: `${tag(i)} ${c.text}` }));
}

function chunks<T>(xs: T[], n: number): T[][] {
  return Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, (i + 1) * n));
}

function walk(root: string, rel = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(p + "/", ...walk(root, p));
    else out.push(p);
  }
  return out;
}

/** Every name and byte under the memory folder, loose git objects inflated, plus what real git reads from the repo. */
function memoryFolderPlaces(root: string): Place[] {
  const places: Place[] = [];
  for (const rel of walk(root)) {
    places.push({ where: `name ${rel}`, text: rel });
    if (rel.endsWith("/")) continue;
    const bytes = readFileSync(path.join(root, rel));
    places.push({ where: rel, text: bytes.toString("latin1") });
    if (/^\.git\/objects\/[0-9a-f]{2}\/[0-9a-f]{38}$/.test(rel))
      places.push({ where: `${rel} (inflated)`, text: inflateSync(bytes).toString("latin1") });
  }
  const git = (...args: string[]) => {
    const r = spawnSync("git", ["-C", root, ...args], { encoding: "latin1", maxBuffer: 256 * 1024 * 1024 });
    assert.equal(r.status, 0, `git ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  places.push({ where: "git log -p --all", text: git("log", "-p", "--all", "--full-history", "--format=%H %s") });
  places.push({ where: "git cat-file --batch-all-objects", text: git("cat-file", "--batch-all-objects", "--batch") });
  return places;
}

/** Every row of every table, and the raw bytes of the DB and its WAL (deleted rows linger in free pages). */
async function stateDbPlaces(db: StateDb, file: string): Promise<Place[]> {
  const places: Place[] = [];
  const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db.db);
  for (const { name } of tables.rows) {
    const rows = await sql.raw(`select * from "${name}"`).execute(db.db);
    places.push({ where: `table ${name}`, text: JSON.stringify(rows.rows) });
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`])
    if (existsSync(f)) places.push({ where: path.basename(f), text: readFileSync(f).toString("latin1") });
  return places;
}

function assertNoLeaks(cases: SecretCase[], places: Place[], what: string): void {
  const leaks: Leak[] = findLeaks(cases, places);
  const summary = [...new Set(leaks.map((l) => `${l.kind} in ${l.where}`))].slice(0, 20);
  assert.deepEqual(summary, [], `${what}: ${leaks.length} leak(s)`);
}

/** Tags that reached `places`: proves the text around each secret was carried, not dropped. */
function tagsIn(cases: Array<{ tag: string }>, places: Place[]): string[] {
  const all = places.map((p) => p.text).join("\n");
  return cases.map((c) => c.tag).filter((t) => all.includes(t));
}

const markers = (places: Place[]) => places.reduce((n, p) => n + p.text.split(REDACTED).length - 1, 0);

/** Rollouts where every case is a user request or a command (what the heuristic extractor keeps). */
function writeCorpusRollouts(
  home: string,
  cases: Array<SecretCase & { tag: string }>,
  perRollout: number,
  branch?: string,
): string[] {
  const ids: string[] = [];
  chunks(cases, perRollout).forEach((group, i) => {
    const half = Math.ceil(group.length / 2);
    const user = group.slice(0, half).map((c) => c.text);
    const commands = group.slice(half).map((c) => c.text);
    const r = writeRollout(home, {
      mtimeMs: Date.now() - 7 * HOUR - i * 60_000,
      cwd: `/work/proj-${i}`,
      branch: i === 0 ? branch : undefined,
      user,
      commands,
      outputs: commands.map((c) => `Process exited with code 0\n${c}`),
      final: `Done. ${group[0]!.text}`,
    });
    ids.push(r.id);
  });
  return ids;
}

describe("secrets never reach memories", { skip: sqliteSkip }, () => {
  test("heuristic pipeline through the real CLI: a real session, rollouts, a hand edit, then the next session", async () => {
    await using h = await harness();
    const cases = taggedCorpus();
    assert.ok(cases.length >= 50);
    const inSession = cases.slice(0, 12);
    const notes = cases.slice(12, 14);
    const inRollouts = cases.slice(14);

    // A real session: secrets in the prompt, in a real process's output, and in the model's text.
    writeFileSync(
      path.join(h.workspace, "secrets.txt"),
      inSession
        .slice(4, 8)
        .map((c) => c.text)
        .join("\n"),
    );
    h.server.enqueue(
      reply().toolCall("exec_command", { cmd: "cat secrets.txt" }),
      reply().text(
        `All set.\n${inSession
          .slice(8)
          .map((c) => c.text)
          .join("\n")}`,
      ),
    );
    const first = await h.run({
      prompt: inSession
        .slice(0, 4)
        .map((c) => c.text)
        .join("\n"),
    });
    assert.ok("ok" in first, JSON.stringify(first));
    const rollout = walk(path.join(h.home, "sessions")).find((p) => p.endsWith(".jsonl"))!;
    const recorded = readFileSync(path.join(h.home, "sessions", rollout), "utf8");
    assert.ok(
      recorded.includes(inSession[0]!.secret) && recorded.includes(inSession[5]!.secret),
      "the rollout is a faithful record",
    );
    if (process.platform !== "win32")
      assert.equal(statSync(path.join(h.home, "sessions", rollout)).mode & 0o777, 0o600);
    // A token pasted into a branch name lands in memory_threads and the summary headers.
    // At most 12 rollouts, so that one run claims them all ([memories] max_running_jobs, 16 by default) however big the corpus.
    const perRollout = Math.ceil(inRollouts.length / 12);
    writeCorpusRollouts(h.home, inRollouts, perRollout, `wip-${inSession[7]!.secret}`);

    const env = { ...process.env, RELAY_HOME: h.home };
    const consolidate = () =>
      runRelayAsync(
        [
          "memories",
          "consolidate",
          "--extractor",
          "heuristic",
          "--consolidator",
          "heuristic",
          "--min-idle-hours",
          "0",
          "--json",
        ],
        env,
      );
    const r1 = await consolidate();
    assert.equal(r1.status, 0, r1.stdout + r1.stderr);
    const rep1 = JSON.parse(r1.stdout);
    assert.equal(rep1.phase1.claimed, 1 + Math.ceil(inRollouts.length / perRollout));
    assert.equal(rep1.phase2.status, "succeeded");

    // The user pastes secrets into the memory files; the next run must not commit or keep them.
    const mem = path.join(h.home, "memories");
    writeFileSync(
      path.join(mem, "MEMORY.md"),
      `${readFileSync(path.join(mem, "MEMORY.md"), "utf8")}\n# User Notes\n- ${notes[0]!.text}\n`,
    );
    writeFileSync(
      path.join(mem, "memory_summary.md"),
      `${readFileSync(path.join(mem, "memory_summary.md"), "utf8")}\n- ${notes[1]!.text}\n`,
    );
    const r2 = await consolidate();
    assert.equal(r2.status, 0, r2.stdout + r2.stderr);
    assert.equal(JSON.parse(r2.stdout).phase2.status, "succeeded");
    assert.match(
      readFileSync(path.join(mem, "MEMORY.md"), "utf8"),
      new RegExp(`# User Notes\\n- ${notes[0]!.tag}`),
      "the note itself survives",
    );

    const ids: string[] = rep1.phase1.outcomes.map((o: { threadId: string }) => o.threadId);
    const cli: Place[] = [
      { where: "consolidate #1", text: r1.stdout + r1.stderr },
      { where: "consolidate #2", text: r2.stdout + r2.stderr },
    ];
    const list = await runRelayAsync(["memories", "list"], env);
    cli.push({ where: "memories list", text: list.stdout + list.stderr });
    // `show` prints DB rows (checked below as rows); two suffice to cover its rendering.
    for (const id of ids.slice(0, 2)) {
      const show = await runRelayAsync(["memories", "show", id], env);
      assert.equal(show.status, 0, show.stderr);
      cli.push({ where: `memories show ${id}`, text: show.stdout + show.stderr });
    }
    const db = await openDb(path.join(h.home, "state.sqlite"));
    let places: Place[];
    try {
      places = [...memoryFolderPlaces(mem), ...(await stateDbPlaces(db, path.join(h.home, "state.sqlite"))), ...cli];
    } finally {
      await db.close();
    }
    const carried = [...inSession.slice(0, 4), ...inSession.slice(8), ...notes.slice(0, 1), ...inRollouts];
    assert.deepEqual(
      carried.map((c) => c.tag).filter((t) => !tagsIn(carried, places).includes(t)),
      [],
      "every carried case reached the memories",
    );
    assert.ok(markers(places) >= carried.length, "redaction markers stand where the secrets were");
    assertNoLeaks(cases, places, "memories, state DB and CLI output");

    // The next session: what it is given.
    const block = (await sessionMemoryBlock(h.home, {}))!;
    assert.match(block, /MEMORY SUMMARY BEGINS/);
    h.server.enqueue(reply().text("hi"));
    // Wired as the CLI wires every session it opens (test/session/cli-run.test.ts checks the CLI does).
    const next = await h.run({ prompt: "what do you remember?", memories: sessionMemories });
    assert.ok("ok" in next, JSON.stringify(next));
    const request = h.server.requests.at(-1)!.rawBody;
    assert.ok(request.includes("MEMORY SUMMARY BEGINS"), "the summary was injected");
    assertNoLeaks(
      cases,
      [
        { where: "injected block", text: block },
        { where: "next session's model request", text: request },
      ],
      "the next session",
    );
  });

  // The consolidation agent's commands run in its sandbox, which Deno and Node have only through bubblewrap.
  test("model extractor and agent consolidator that echo secrets: the models see none, nothing is kept", {
    skip: skipBecause("the secrets test's consolidation agent", noSandboxHere()),
  }, async () => {
    useTestRelay();
    await using h = tempHome();
    const cases = taggedCorpus();
    const pre = cases.slice(0, 2);
    const echoed = cases.slice(2, 10);
    const inRollouts = cases.slice(10);
    // Tool outputs and other item types this time (the model extractor sees them all).
    chunks(inRollouts, 14).forEach((group, i) => {
      const q = Math.ceil(group.length / 4);
      writeRollout(h.home, {
        mtimeMs: Date.now() - 7 * HOUR - i * 60_000,
        user: group.slice(0, q).map((c) => c.text),
        commands: group.slice(q, 2 * q).map((c) => c.text),
        outputs: group.slice(2 * q, 3 * q).map((c) => c.text),
        final: group
          .slice(3 * q)
          .map((c) => c.text)
          .join("\n"),
        extraItems: [
          {
            type: "custom_tool_call",
            name: "apply_patch",
            call_id: `p${i}`,
            input: `*** Begin Patch\n*** Add File: .env\n+${group[0]!.text}\n*** End Patch`,
          },
          {
            type: "local_shell_call",
            call_id: `l${i}`,
            status: "completed",
            action: { type: "exec", command: ["sh", "-c", group[1]!.text] },
          },
        ],
      });
    });
    const rolloutCount = Math.ceil(inRollouts.length / 14);
    // A memory folder written by hand (or an older relay) before the first baseline.
    mkdirSync(h.memories, { recursive: true });
    writeFileSync(path.join(h.memories, "MEMORY.md"), `# Memory\n- ${pre[0]!.text}\n`);

    const echo = echoed.map((c) => c.text).join("\n");
    const requests: ModelRequest[] = [];
    const spy = (turns: ScriptTurn[]): ModelClient => {
      const scripted = createScriptedClient({ script: { turns } });
      return {
        provider: "spy",
        stream(req, signal) {
          requests.push(req);
          return scripted.stream(req, signal);
        },
      };
    };
    const replyJson = JSON.stringify({
      rollout_summary: `# Summary\n${echo}`,
      rollout_slug: `deploy-${echoed[7]!.secret}`,
      raw_memory: `---\ndescription: x\nkeywords: ${echoed[0]!.secret}\n---\n- ${echo}`,
    });
    const extractor = modelExtractor(spy(Array.from({ length: rolloutCount }, () => ({ text: replyJson }))), "m");
    const db = await openDb(h.dbFile);
    try {
      const p1 = ok(
        await runPhase1({
          state: db,
          relayHome: h.home,
          extractor,
          workerId: "w",
          now: Date.now,
          maxAgeDays: 10,
          minIdleHours: 6,
          maxClaims: 50,
          maxRunningJobs: 50,
          concurrency: 2,
        }),
      );
      assert.deepEqual(
        p1.outcomes.map((o) => o.status),
        Array(rolloutCount).fill("succeeded"),
      );
      const extractorSaw: Place[] = requests.map((r, i) => ({
        where: `extractor request ${i}`,
        text: JSON.stringify(r),
      }));
      assert.deepEqual(
        inRollouts.map((c) => c.tag).filter((t) => !tagsIn(inRollouts, extractorSaw).includes(t)),
        [],
        "every case reached the extractor's prompt",
      );
      assertNoLeaks(cases, extractorSaw, "the extraction model's input");
      requests.length = 0;

      // The agent reads its inputs, then (misbehaving) writes secrets into files and file names.
      const badName = echoed[7]!.secret;
      const write = [
        `cat > MEMORY.md <<'EOF'\n# Task Group: x\n- ${echo}\nEOF`,
        `printf 'v1\\n\\n## User Profile\\n- %s\\n' '${echoed[4]!.secret}' > memory_summary.md`,
        `mkdir -p 'dir-${echoed[5]!.secret}' && echo '${echoed[6]!.text}' > 'dir-${echoed[5]!.secret}/n.md'`,
        `echo hi > 'notes-${badName}.md'`,
      ].join("\n");
      const agentModel = spy([
        {
          tool_calls: [
            {
              name: "exec_command",
              arguments: { cmd: "cat phase2_workspace_diff.md raw_memories.md rollout_summaries/*.md MEMORY.md" },
            },
          ],
        },
        { tool_calls: [{ name: "exec_command", arguments: { cmd: write } }] },
        { text: `updated; ${echoed[0]!.secret}` },
      ]);
      const consolidator = agentConsolidator({
        home: h.home,
        config: { ...defaultConfig(), model: "scripted" },
        model: agentModel,
      });
      const p2 = ok(
        await runPhase2({
          state: db,
          root: h.memories,
          consolidator,
          workerId: "p2",
          now: Date.now,
          maxRawMemories: 256,
          maxUnusedDays: 30,
          cooldownSeconds: 0,
        }),
      );
      assert.equal(p2.status, "succeeded", p2.detail);
      // Before the agent's own (echoing) turns, it saw only what relay gave it.
      const agentSaw: Place[] = requests
        .slice(0, 2)
        .map((r, i) => ({ where: `agent request ${i}`, text: JSON.stringify(r) }));
      assert.ok(
        agentSaw[1]!.text.includes("Memory Workspace Diff") && agentSaw[1]!.text.includes(REDACTED),
        "the agent read its inputs",
      );
      assertNoLeaks(cases, agentSaw, "the consolidation model's input");
      assertNoLeaks(cases, [{ where: "phase 2 report", text: JSON.stringify(p2) }], "the phase 2 report");

      const places = [...memoryFolderPlaces(h.memories), ...(await stateDbPlaces(db, h.dbFile))];
      assert.ok(
        walk(h.memories).some((p) => p.startsWith("notes-REDACTED")),
        "the file with a secret in its name was renamed",
      );
      assertNoLeaks(cases, places, "memories and state DB");
      assertNoLeaks(
        cases,
        [{ where: "injected block", text: (await memoryInstructions(h.home))! }],
        "the next session",
      );
    } finally {
      await db.close();
    }
  });

  test("phase 1 stores nothing unredacted whatever the extractor; phase 1 and 2 failure reasons are redacted too", async () => {
    await using h = tempHome();
    const cases = taggedCorpus();
    const all = cases.map((c) => c.text).join("\n");
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    const b = writeRollout(h.home, { mtimeMs: Date.now() - 8 * HOUR });
    // A careless extractor: returns the secrets as they are, or fails quoting them.
    const careless: Extractor = async (input) =>
      input.threadId === b.id
        ? err("stage1_model", `bad reply: ${all}`)
        : { ok: { rawMemory: all, rolloutSummary: all, rolloutSlug: cases[20]!.secret } };
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(
        await runPhase1({
          state: db,
          relayHome: h.home,
          extractor: careless,
          workerId: "w",
          now: Date.now,
          maxAgeDays: 10,
          minIdleHours: 6,
          maxClaims: 5,
          maxRunningJobs: 5,
          concurrency: 1,
        }),
      );
      assert.deepEqual(rep.outcomes.map((o) => o.status).sort(), ["failed", "succeeded"]);
      const stored = ok(await listOutputs(db));
      const job = ok(await readStage1Job(db, b.id))!;
      assert.ok(job.last_error!.includes(REDACTED));
      assertNoLeaks(
        cases,
        [
          { where: "report", text: JSON.stringify(rep) },
          { where: "outputs", text: JSON.stringify(stored) },
          { where: "last_error", text: job.last_error! },
        ],
        "phase 1",
      );
      // Phase 2: a consolidator that fails quoting them.
      const failing = ok(
        await runPhase2({
          state: db,
          root: h.memories,
          consolidator: async () => err("failed_agent", `agent said: ${all}`),
          workerId: "p2",
          now: Date.now,
          maxRawMemories: 9,
          maxUnusedDays: 30,
          cooldownSeconds: 0,
        }),
      );
      assert.equal(failing.status, "failed");
      const p2job = ok(await readPhase2Job(db))!;
      assert.ok(p2job.last_error!.includes(REDACTED));
      assertNoLeaks(cases, [{ where: "phase 2 report", text: JSON.stringify(failing) }], "phase 2 failure");
      assertNoLeaks(cases, await stateDbPlaces(db, h.dbFile), "state DB");
      // And the heuristic extractor, handed the raw corpus directly, derives nothing from a secret.
      const items = cases.map((c) => ({
        type: "message" as const,
        role: "user" as const,
        content: [{ type: "input_text" as const, text: c.text }],
      }));
      const res = ok(
        await heuristicExtractor({
          threadId: "t",
          rolloutPath: "/r.jsonl",
          cwd: "/w",
          gitBranch: null,
          items: [...items, { type: "message", role: "assistant", content: [{ type: "output_text", text: all }] }],
        }),
      );
      assertNoLeaks(cases, [{ where: "heuristic", text: JSON.stringify(res) }], "heuristic extractor");
      assert.ok(res.rolloutSlug && !res.rolloutSlug.includes("redacted"), `slug ${res.rolloutSlug}`);
    } finally {
      await db.close();
    }
  });

  test("the read path redacts a hand-edited memory_summary.md before it is injected", async () => {
    await using h = tempHome();
    const cases = taggedCorpus();
    mkdirSync(h.memories, { recursive: true });
    writeFileSync(
      path.join(h.memories, "memory_summary.md"),
      `v1\n\n## User Profile\n${cases.map((c) => `- ${c.text}`).join("\n")}\n`,
    );
    const block = (await memoryInstructions(h.home, 20_000))!;
    assert.ok(block.includes(cases[0]!.tag) && block.includes(cases.at(-1)!.tag));
    assertNoLeaks(cases, [{ where: "block", text: block }], "injected summary");
  });
});

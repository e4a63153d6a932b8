/**
 * A scripted run for the checkpoint tests: the Solver writes a wrong answer, the Verifier fails
 * it, the Solver fixes it, the Verifier passes it, the Solver delivers. Each checkpoint's four
 * folders and rollout sizes are captured as the run reports it, to compare a restore against.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultConfig } from "../../src/config/config.ts";
import { CHECKPOINT_DIRS } from "../../src/infty/checkpoint-format.ts";
import { type InftyEvent, runInfty } from "../../src/infty/orchestrator.ts";
import { RunMetaSchema } from "../../src/infty/run-format.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "./fake-model-server.ts";
import { useTestRelay } from "./self.ts";

export const sig = (o: unknown) => reply().text(JSON.stringify(o));
export const patch = (file: string, text: string) => ({
  input: `*** Begin Patch\n*** Add File: ${file}\n${text
    .split("\n")
    .map((l) => `+${l}`)
    .join("\n")}\n*** End Patch\n`,
});
export const DELIVER =
  "mkdir -p deliverable && cp artifacts/answer.txt deliverable/ && { echo '# Answer'; echo '## Manifest'; echo \"- answer.txt ($(wc -c < deliverable/answer.txt | tr -d ' ') bytes)\"; echo '## How to verify'; echo 'cat answer.txt'; echo '## Limitations'; echo 'none'; } > deliverable/README.md";
export const CLAIM = "memory/claims/answer.json";

/** Every file of the four folders: path relative to the run → content. */
export function folderFiles(runDir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of CHECKPOINT_DIRS) {
    for (const rel of readdirSync(path.join(runDir, d), { recursive: true }) as string[]) {
      const abs = path.join(runDir, d, rel);
      if (statSync(abs).isFile()) out.set(`${d}/${rel}`, readFileSync(abs, "utf8"));
    }
  }
  return out;
}

export interface Captured {
  id: string;
  trigger: string;
  files: Map<string, string>;
  rollouts: Map<string, number>;
}

/** A home, a fake model server and a config for runs against it; removed when disposed. */
export async function setup(api: "openai-responses" | "openai-chat" = "openai-responses") {
  useTestRelay();
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-"));
  const server = await startFakeModelServer();
  const events: InftyEvent[] = [];
  return {
    home,
    server,
    events,
    config: {
      ...defaultConfig(),
      model: "m",
      model_provider: api,
      base_url: server.baseUrl,
      sandbox_mode: "danger-full-access" as const,
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
type Setup = Awaited<ReturnType<typeof setup>>;

/** The replies of the first timeline: fail, fix, pass, deliver, the deliverable's own pass. */
function enqueueFirstTimeline(server: FakeModelServer): void {
  server.enqueue(
    reply().toolCall("apply_patch", patch("artifacts/answer.txt", "41")),
    reply().toolCall(
      "apply_patch",
      patch(
        CLAIM,
        JSON.stringify({ claim: "the answer is 42", evidence: ["artifacts/answer.txt", "cat artifacts/answer.txt"] }),
      ),
    ),
    sig({ type: "verification_request", claim_path: CLAIM, notes: "first try" }),
    sig({ verdict: "fail", reasons: ["answer.txt says 41, not 42"], suggestions: ["write 42"] }),
    reply().toolCall("exec_command", { cmd: "echo 42 > artifacts/answer.txt" }),
    sig({ type: "verification_request", claim_path: CLAIM, notes: "fixed" }),
    sig({ verdict: "pass", reasons: ["answer.txt says 42"], suggestions: [] }),
    reply().toolCall("exec_command", { cmd: DELIVER }),
    sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "the answer is 42" }),
    sig({ verdict: "pass", reasons: ["deliverable/answer.txt says 42"], suggestions: [] }),
  );
}

/** Runs the first timeline to a verified deliverable; returns what each checkpoint held. */
export async function runFirstTimeline(
  t: Setup,
  runId: string,
): Promise<{ runDir: string; captured: Captured[]; status: string }> {
  enqueueFirstTimeline(t.server);
  const runDir = path.join(t.home, "infty", runId);
  const captured: Captured[] = [];
  const r = await runInfty({
    home: t.home,
    config: t.config,
    objective: "Find the answer; it must be 42.",
    runId,
    verifiers: 1,
    signal: new AbortController().signal,
    report: (e) => {
      t.events.push(e);
      if (e.type !== "checkpoint") return;
      // Reported right after the commit, before the run goes on: this is what the checkpoint holds.
      const meta = RunMetaSchema.parse(JSON.parse(readFileSync(path.join(runDir, "run.json"), "utf8")));
      const rollouts = new Map(meta.roles.map((role) => [role.role, statSync(role.rollout_path!).size]));
      captured.push({ id: e.name, trigger: e.trigger, files: folderFiles(runDir), rollouts });
    },
  });
  if ("error" in r) throw new Error(r.error.message);
  return { runDir, captured, status: r.ok.status };
}

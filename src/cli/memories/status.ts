/** `relay memories status`: counts of rollouts, memories and jobs, the last consolidation, and who holds which lease. */

import type { Command } from "@commander-js/extra-typings";
import { memoriesDir, relayHome } from "../../home/home.ts";
import { type HolderReport, holderName, holderReport, holderSince } from "../../memories/holder.ts";
import { listLeases, PHASE2_KIND, readPhase2Job, statusCounts } from "../../memories/store/index.ts";
import { ExitCode, fail } from "../usage.ts";
import { DB_HELP, openDb } from "./state-db.ts";

const LEASE_STATE: Record<HolderReport["state"], string> = {
  alive: "running",
  gone: "gone: the next consolidate takes it over",
  unknown: "not checkable from this host: kept until its heartbeat is 5 min old or its lease ends",
};

/** `leases held: 1` and one line per lease: who, since when, heartbeat age, and what happens next. */
function leaseText(leases: Array<HolderReport & { scope: string; key: string }>): string {
  const lines = leases.map(
    (l) =>
      `  ${l.scope === "phase2" ? "phase 2 lock" : `phase 1 claim ${l.key}`}: ${holderName(l)} ${holderSince(l)} (${LEASE_STATE[l.state]})`,
  );
  return `leases held: ${leases.length || "none"}\n${lines.map((l) => `${l}\n`).join("")}`;
}

export function addStatus(memories: Command) {
  memories
    .command("status")
    .description("counts of rollouts, memories and jobs, and the last consolidation")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (opts) => {
      const home = relayHome();
      const state = await openDb(opts.db, home);
      try {
        const counts = await statusCounts(state);
        if ("error" in counts) fail(counts.error.message, ExitCode.Usage);
        const job = await readPhase2Job(state);
        if ("error" in job) fail(job.error.message, ExitCode.Usage);
        const now = Math.floor(Date.now() / 1000);
        const held = await listLeases(state, now);
        if ("error" in held) fail(held.error.message, ExitCode.Usage);
        const j = job.ok;
        const leases = held.ok.map((l) => ({
          scope: l.kind === PHASE2_KIND ? "phase2" : "phase1",
          key: l.job_key,
          ...holderReport(l, now),
        }));
        const out = {
          db: state.location,
          memories_dir: memoriesDir(home),
          ...counts.ok,
          phase2: j
            ? {
                status: j.status,
                finished_at: j.finished_at,
                last_error: j.last_error,
                last_success_watermark: j.last_success_watermark,
                input_watermark: j.input_watermark,
              }
            : null,
          leases,
        };
        if (opts.json) process.stdout.write(JSON.stringify(out) + "\n");
        else {
          const jobs =
            Object.entries(out.jobs)
              .map(([k, v]) => `${k}=${v}`)
              .join(" ") || "none";
          const p2 = j
            ? `${j.status}${j.finished_at ? ` at ${new Date(j.finished_at * 1000).toISOString()}` : ""}${j.last_error ? ` (${j.last_error})` : ""}`
            : "never run";
          process.stdout.write(
            `state DB: ${out.db}\nmemory folder: ${out.memories_dir}\nrollouts seen: ${out.threads}\nmemories: ${out.outputs}\nphase 1 jobs: ${jobs}\nlast consolidation: ${p2}\n${leaseText(leases)}`,
          );
        }
      } finally {
        await state.close();
      }
    });
}

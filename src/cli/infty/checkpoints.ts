/** `relay infty checkpoints` and `relay infty restore`: flags, rendering and exit codes. */
import { type Command, Option } from "@commander-js/extra-typings";
import { type Checkpoint, listCheckpoints } from "../../infty/checkpoints.ts";
import { packRun } from "../../infty/pack-run.ts";
import { type RestoreOutcome, restoreRun } from "../../infty/restore.ts";
import { wholeNumber } from "../number-flag.ts";
import { alignRows, outputWidth } from "../session-format.ts";
import { ExitCode, fail } from "../usage.ts";
import { loadRun, RUN_ARG_HELP } from "./run-arg.ts";

const TRIGGER_LABEL: Record<Checkpoint["trigger"], string> = {
  handoff: "handoff",
  verification_pass: "verification pass",
  delivery: "delivery",
  resume: "resume",
};

function renderList(list: Checkpoint[]): string {
  if (list.length === 0) return "";
  const rows = list.map((c) => ({
    cells: [c.id, c.at, String(c.turn), TRIGGER_LABEL[c.trigger]],
    text: c.summary.split("\n")[0]!,
  }));
  return `${alignRows(rows, outputWidth(process.stdout), { cells: ["CHECKPOINT", "AT", "TURN", "TRIGGER"], text: "SUMMARY" }).join("\n")}\n`;
}

export function addCheckpoints(infty: Command) {
  infty
    .command("checkpoints")
    .description("list a run's checkpoints (one after every handoff; oldest first)")
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--json", "print JSON: [{id, at, trigger, summary, turn, handoff, commit, repo_commit?}]")
    .action(async (ref, opts) => {
      const store = await loadRun(ref);
      const runId = store.id;
      const list = await listCheckpoints(store.dir);
      if ("error" in list) fail(list.error.message, ExitCode.Failure);
      if (opts.json) {
        process.stdout.write(
          JSON.stringify(
            list.ok.map(({ seq: _, ...c }) => c),
            null,
            2,
          ) + "\n",
        );
        return;
      }
      if (list.ok.length === 0)
        process.stderr.write(`run ${runId} has no checkpoints yet (one is taken after every handoff)\n`);
      process.stdout.write(renderList(list.ok));
    });
}

function renderRestore(runId: string, r: RestoreOutcome): string {
  const c = r.checkpoint;
  const lines = [
    `restored run ${runId} to ${c.id} (${c.at}, turn ${c.turn}, ${TRIGGER_LABEL[c.trigger]}: ${c.summary.split("\n")[0]!.slice(0, 100)})`,
  ];
  for (const ro of r.rollouts) {
    lines.push(
      ro.side_file
        ? `  ${ro.role}: rollout cut from ${ro.before} to ${ro.bytes} bytes; the rest is in ${ro.side_file}`
        : `  ${ro.role}: rollout unchanged (${ro.bytes} bytes)`,
    );
  }
  lines.push(`continue with: relay infty resume ${runId}`);
  return lines.join("\n") + "\n";
}

export function addRestore(infty: Command) {
  infty
    .command("restore")
    .description("rewind a stopped run to a checkpoint: its files, its state and the roles' conversations")
    .argument("<run-id>", RUN_ARG_HELP)
    .argument("<checkpoint>", "a checkpoint id from `relay infty checkpoints <run-id>` (ckpt-0003, or 3)")
    .option("--json", "print the outcome as JSON")
    .addHelpText(
      "after",
      `
artifacts/, memory/, index/ and deliverable/ get the checkpoint's files; run.json its state (the
pending step, turns, verified_at, deliverable; nothing in flight); each role's rollout is cut to
its size at the checkpoint, the cut-off rest kept next to it in <rollout>.after-<checkpoint>.jsonl.
Then \`relay infty resume <run-id>\` continues from there. A live run is refused (stop it first).
A restore cut short by a crash is finished by running it again, or by \`relay infty resume\`.`,
    )
    .action(async (ref, checkpoint, opts) => {
      const store = await loadRun(ref);
      const runId = store.id;
      const r = await restoreRun(store, checkpoint);
      if ("error" in r)
        fail(r.error.message, r.error.code === "unknown_checkpoint" ? ExitCode.Usage : ExitCode.Failure);
      process.stdout.write(
        opts.json
          ? JSON.stringify({ checkpoint: r.ok.checkpoint, rollouts: r.ok.rollouts }, null, 2) + "\n"
          : renderRestore(runId, r.ok),
      );
    });
}

export function addPack(infty: Command) {
  infty
    .command("pack")
    .description("pack a run's checkpoint repository now (a driver packs it as the run goes, past 256 loose objects)")
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--if-due", "only if enough loose objects have piled up")
    .addOption(
      new Option("--held-by <pid>", "the driver that runs this (it holds the run's lease)")
        .argParser(wholeNumber("--held-by", 2))
        .hideHelp(),
    )
    .addOption(new Option("--fleet-lease", "the driver holds the fleet's lease (in RELAY_INFTY_DB)").hideHelp())
    .option("--json", "print the outcome as JSON")
    .action(async (ref, opts) => {
      const store = await loadRun(ref);
      const fleet = opts.fleetLease ? await fleetLease(store.id) : undefined;
      const r = await packRun(store, {
        heldBy: opts.heldBy,
        force: !opts.ifDue,
        ...(fleet ? { lease: fleet.lease } : {}),
      }).finally(() => fleet?.close());
      if ("error" in r) fail(r.error.message, r.error.code === "run_live" ? ExitCode.Failure : ExitCode.Failure);
      if (opts.json) process.stdout.write(JSON.stringify(r.ok ?? { objects: 0, merged: false }) + "\n");
      else
        process.stdout.write(
          r.ok
            ? `packed ${r.ok.objects} objects of run ${store.id}${r.ok.merged ? " (all packs merged into one)" : ""}\n`
            : `nothing to pack in run ${store.id}\n`,
        );
    });
}

/** The fleet's lease of run `runId`, with the DB its driver gave in RELAY_INFTY_DB. */
async function fleetLease(runId: string) {
  const { openFleet } = await import("./fleet.ts");
  const { fleet } = await openFleet(undefined);
  const { PgLease, leaseTimeoutMs } = await import("../../infty/fleet/index.ts");
  return { lease: new PgLease(fleet, runId, leaseTimeoutMs()), close: () => fleet.close() };
}

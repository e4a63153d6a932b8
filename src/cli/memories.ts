/**
 * `relay memories`: the two-phase memory pipeline over session rollouts. Its subcommands are in
 * cli/memories/: consolidate.ts (with the exit codes cron sees), schedule.ts, status.ts, and
 * stored.ts (list, show, forget).
 */

import { Command } from "@commander-js/extra-typings";
import { consolidateCommand } from "./memories/consolidate.ts";
import { scheduleCommand } from "./memories/schedule.ts";
import { addStatus } from "./memories/status.ts";
import { addForget, addList, addShow } from "./memories/stored.ts";

export function memoriesCommand() {
  const memories = new Command("memories")
    .description("the two-phase memory pipeline over session rollouts")
    .addHelpText(
      "after",
      `
Files: $RELAY_HOME/memories/ holds MEMORY.md (handbook), memory_summary.md (injected into new
sessions; relay run --no-memories turns that off), raw_memories.md and rollout_summaries/ (inputs),
and .git (the baseline of the last consolidation). The state DB holds jobs and stored memories.

Exit codes: 0 ok; 1 failed (or show: no such memory); 2 bad usage, config or state DB;
3 consolidate skipped phase 2 (lock held, cooldown or backoff). See docs/memories.md.`,
    );
  memories.addCommand(consolidateCommand());
  memories.addCommand(scheduleCommand());
  addStatus(memories);
  addList(memories);
  addShow(memories);
  addForget(memories);
  return memories;
}

/**
 * Where a scripted role goes on after a resume. A scripted client numbers what it emits by turn
 * (msg_scripted_N, rs_scripted_N, call_scripted_N_i), so a resumed session's history says which
 * turns it used. The last one counts as used only if all of it was recorded and each of its tool
 * calls got a real output; otherwise it is replayed, as a model would retry a cut-off step.
 */
import type { ResponseItem } from "../model/items.ts";
import type { ScriptTurn } from "../model/scripted.ts";

/** The output session/agent.ts gives a call that a crash cut off (repairDanglingCalls). */
const CUT_OFF = /^aborted: the previous run ended before this tool call finished/;

const turnOf = (id: unknown): number | undefined => {
  const m = /^(?:msg|rs|call)_scripted_(\d+)(?:_\d+)?$/.exec(typeof id === "string" ? id : "");
  return m ? Number(m[1]) : undefined;
};

/** Ids a turn's items carry, in the order the scripted client emits them. */
function expectedIds(n: number, turn: ScriptTurn): string[] {
  return [
    ...(turn.reasoning ? [`rs_scripted_${n}`] : []),
    ...(turn.text ? [`msg_scripted_${n}`] : []),
    ...(turn.tool_calls ?? []).map((_, i) => `call_scripted_${n}_${i + 1}`),
  ];
}

export function scriptTurnsUsed(items: readonly ResponseItem[], turns: readonly ScriptTurn[]): number {
  const seen = new Set<string>();
  const answered = new Set<string>();
  let last = 0;
  for (const item of items) {
    const x = item as { type: string; id?: unknown; call_id?: unknown; output?: unknown };
    if (x.type === "function_call_output" || x.type === "custom_tool_call_output") {
      if (!CUT_OFF.test(String(x.output ?? ""))) answered.add(String(x.call_id));
      continue;
    }
    const id = x.type === "function_call" || x.type === "custom_tool_call" ? x.call_id : x.id;
    const n = turnOf(id);
    if (n === undefined) continue;
    seen.add(String(id));
    last = Math.max(last, n);
  }
  const turn = turns[last - 1];
  if (!turn) return last;
  const ids = expectedIds(last, turn);
  const whole = ids.every((id) => seen.has(id) && (!id.startsWith("call_") || answered.has(id)));
  return whole ? last : last - 1;
}

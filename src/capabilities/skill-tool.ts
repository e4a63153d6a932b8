/**
 * Reading a skill's body, only when it is asked for: by the model through the `skill` tool
 * (`{"name": "deploy"}`; code mode's `tools.skill`), or by `$deploy` in a prompt. The body is
 * read through whatever listed the skill (its environment's executor, or this process for a
 * local one), at most SKILL_BODY_MAX_BYTES (32 KiB) at a time; a longer one ends with a note
 * that says how to read on (`{"name", "offset"}`) and where the file is.
 */
import { z } from "zod";
import type { EmitEvent } from "../contracts/events.ts";
import type { ToolSpec } from "../contracts/executor.ts";
import { SKILL_BODY_MAX_BYTES, type SkillBody } from "../contracts/skills.ts";
import { parseToolArguments } from "../contracts/tool-args.ts";
import type { ToolCallOutcome } from "../contracts/tool-outcome.ts";
import { type ResponseItem, userMessage } from "../model/items.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { fillPrompt } from "../util/prompt-template.ts";
import type { SessionEnvironments } from "./environments.ts";
import * as prompts from "./prompts.generated.ts";
import { readSkillBody, type SelectedSkill } from "./skill-sources.ts";

export const SKILL_TOOL = "skill";

const SkillArgsSchema = lazySchema(() =>
  z.object({ name: z.string().min(1), offset: z.number().int().min(0).optional() }),
);

export const SKILL_TOOL_SPEC: ToolSpec = {
  name: SKILL_TOOL,
  description: fillPrompt(prompts.SKILL_TOOL, { max_bytes: SKILL_BODY_MAX_BYTES }),
  input_schema: {
    type: "object",
    properties: {
      name: { type: "string", description: "the skill's name" },
      offset: {
        type: "number",
        description: "byte offset into the instructions, from a previous call's note (default 0)",
      },
    },
    required: ["name"],
    additionalProperties: false,
  },
  read_only: true,
  route: "call",
};

const attr = (v: string) => v.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

function where(s: SelectedSkill): string {
  return s.source.kind === "local" ? "on this host (a local skill)" : `on environment ${s.source.environmentId}`;
}

/** The text the model gets: the body in a `<skill>` element, and how to read on when it was cut. */
export function skillText(s: SelectedSkill, b: SkillBody, offset: number): string {
  const origin =
    s.source.kind === "local"
      ? `source="local"`
      : `environment="${attr(s.source.environmentId)}" root="${attr(s.source.rootId)}"`;
  const range = offset > 0 ? ` offset="${offset}"` : "";
  let note = "";
  if (b.next_offset !== undefined) {
    const total = b.body_bytes ?? b.bytes;
    note = `\n[skill ${s.name} truncated: this is bytes ${offset}-${b.next_offset} of its ${total}-byte instructions. Read on with the ${SKILL_TOOL} tool {"name": ${JSON.stringify(s.name)}, "offset": ${b.next_offset}}; the file is ${s.path} ${where(s)}.]`;
  }
  return `<skill name="${attr(s.name)}" ${origin} path="${attr(s.path)}"${range}>\n${b.body}${note}\n</skill>`;
}

export class SkillReader {
  constructor(
    readonly skills: SelectedSkill[],
    private readonly environments: SessionEnvironments,
  ) {}

  get empty(): boolean {
    return this.skills.length === 0;
  }

  private find(name: string): SelectedSkill | undefined {
    return this.skills.find((s) => s.name === name);
  }

  /** The `skill` tool. */
  async call(rawArguments: string): Promise<ToolCallOutcome> {
    const raw = parseToolArguments(rawArguments);
    const parsed = "ok" in raw ? SkillArgsSchema.safeParse(raw.ok) : undefined;
    if (!parsed?.success)
      return {
        output: `The ${SKILL_TOOL} tool takes {"name": "<skill name>", "offset"?: <bytes>}${parsed ? `: ${z.prettifyError(parsed.error)}` : ""}`,
        success: false,
        display: SKILL_TOOL,
      };
    const { name, offset = 0 } = parsed.data;
    const skill = this.find(name);
    if (!skill) {
      const names = this.skills.map((s) => s.name);
      return {
        output: `unknown skill ${JSON.stringify(name)}; the skills are: ${names.slice(0, 50).join(", ")}${names.length > 50 ? `, … (${names.length - 50} more)` : ""}`,
        success: false,
        display: `${SKILL_TOOL} ${name}`,
      };
    }
    const body = await readSkillBody(skill, this.environments, offset);
    if ("error" in body)
      return {
        output: `skill ${name} could not be read ${where(skill)}: ${body.error.message}`,
        success: false,
        display: `${SKILL_TOOL} ${name}`,
      };
    return { output: skillText(skill, body.ok, offset), success: true, display: `${SKILL_TOOL} ${name}` };
  }

  /** `$name` in a prompt: that skill's (first slice of) body, before the prompt. */
  async preamble(prompt: string, emit: EmitEvent): Promise<ResponseItem[]> {
    const out: ResponseItem[] = [];
    for (const word of new Set([...prompt.matchAll(/\$([A-Za-z0-9][A-Za-z0-9_.-]*)/g)].map((x) => x[1]!))) {
      // "use $deploy." ends a sentence: the dot is not part of the name.
      const name = this.find(word) ? word : word.replace(/[.-]+$/, "");
      const skill = this.find(name);
      if (!skill) continue;
      const body = await readSkillBody(skill, this.environments);
      if ("error" in body) {
        emit({ type: "warning", message: `skill $${name} could not be read ${where(skill)}: ${body.error.message}` });
        continue;
      }
      out.push(userMessage(skillText(skill, body.ok, 0)));
    }
    return out;
  }
}

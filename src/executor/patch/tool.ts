/** apply_patch: add, delete, update and move files with one all-or-nothing patch. */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import { err, errorMessage } from "../../util/result.ts";
import * as prompts from "../prompts.generated.ts";
import { defineTool } from "../tool.ts";
import { applyPatch } from "./apply.ts";
import { parsePatch } from "./parse.ts";

const parameters = lazySchema(() =>
  z.object({
    input: z.string().describe('The whole patch, from the "*** Begin Patch" line to the "*** End Patch" line.'),
  }),
);

export const applyPatchTool = defineTool({
  name: "apply_patch",
  description: prompts.APPLY_PATCH,
  parameters,
  readOnly: false,
  async execute(args, ctx) {
    try {
      const ops = parsePatch(args.input);
      if ("error" in ops) return ops;
      return await applyPatch(ops.ok, ctx);
    } catch (e) {
      return err("io_error", `apply_patch failed: ${errorMessage(e)}`);
    }
  },
});

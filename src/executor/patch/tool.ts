/** apply_patch: add, delete, update and move files with one all-or-nothing patch. */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import { err, errorMessage } from "../../util/result.ts";
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
  description: [
    "Edits files with a patch. Either every change applies or no file is touched.",
    "Format:",
    "*** Begin Patch",
    "*** Add File: <path>           (new file; every content line starts with +)",
    "*** Delete File: <path>",
    "*** Update File: <path>        (optionally followed by: *** Move to: <new path>)",
    "@@ <optional line to find first, such as a function or class header>",
    " an unchanged context line (starts with a space)",
    "-a line to remove",
    "+a line to add",
    "*** End of File                (optional: the hunk's lines are at the end of the file)",
    "*** End Patch",
    "Paths are relative to the working directory (or absolute). Give about 3 lines of context",
    "around each change and copy context and removed lines exactly from the file; hunks for one",
    "file must appear in file order, each starting with @@.",
  ].join("\n"),
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

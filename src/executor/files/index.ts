/** The host-local file tools the executor advertises. */

import { applyPatchTool } from "../patch/tool.ts";
import type { ExecutorTool } from "../tool.ts";
import { grepFilesTool } from "./grep-files.ts";
import { listDirTool } from "./list-dir.ts";
import { readFileTool } from "./read-file.ts";

export { checkWritable, resolveToolPath } from "./paths.ts";
export { applyPatchTool, grepFilesTool, listDirTool, readFileTool };

export const fileTools: ExecutorTool[] = [readFileTool, listDirTool, grepFilesTool, applyPatchTool];

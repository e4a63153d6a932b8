/** The host-local file tools the executor advertises. */
import type { ExecutorTool } from "../tool.ts";
import { applyPatchTool } from "../patch/tool.ts";
import { grepFilesTool } from "./grep-files.ts";
import { listDirTool } from "./list-dir.ts";
import { readFileTool } from "./read-file.ts";

export { applyPatchTool, grepFilesTool, listDirTool, readFileTool };
export { checkWritable, resolveToolPath } from "./paths.ts";

export const fileTools: ExecutorTool[] = [readFileTool, listDirTool, grepFilesTool, applyPatchTool];

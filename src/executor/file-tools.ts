/**
 * The host-local file tools the executor advertises: the readers in files/ and apply_patch
 * (patch/, which uses files/'s path checks). Listed here, above both, so neither folder imports
 * the other's tools.
 */
import { grepFilesTool } from "./files/grep-files.ts";
import { listDirTool } from "./files/list-dir.ts";
import { readFileTool } from "./files/read-file.ts";
import { applyPatchTool } from "./patch/tool.ts";
import type { ExecutorTool } from "./tool.ts";

export const fileTools: ExecutorTool[] = [readFileTool, listDirTool, grepFilesTool, applyPatchTool];

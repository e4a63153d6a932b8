/** The executor's tool descriptions (exec_command and write_stdin's live in contracts/, shared with the session) are exactly the pinned texts. */
import { describe, test } from "node:test";
import { EXEC_COMMAND_DESCRIPTION, WRITE_STDIN_DESCRIPTION } from "../../src/contracts/exec-tools.ts";
import * as contractPrompts from "../../src/contracts/prompts.generated.ts";
import { createGrepFilesTool } from "../../src/executor/files/grep-files.ts";
import { listDirTool } from "../../src/executor/files/list-dir.ts";
import { readFileTool } from "../../src/executor/files/read-file.ts";
import { applyPatchTool } from "../../src/executor/patch/tool.ts";
import * as generated from "../../src/executor/prompts.generated.ts";
import { assertCovers, assertPinned } from "../support/prompt-pins.ts";

describe("executor tool descriptions", () => {
  test("every description is the pinned text", () => {
    assertPinned(
      {
        EXEC_COMMAND_DESCRIPTION,
        WRITE_STDIN_DESCRIPTION,
        read_file: readFileTool.description,
        list_dir: listDirTool.description,
        grep_files: createGrepFilesTool().description,
        grep_files_small: createGrepFilesTool({ maxFiles: 3, maxFileBytes: 1536 }).description,
        apply_patch: applyPatchTool.description,
      },
      {
        EXEC_COMMAND_DESCRIPTION: "45946ae4ae65e286",
        WRITE_STDIN_DESCRIPTION: "a08d29854967e401",
        read_file: "d914feb61ec73bcf",
        list_dir: "f261eaf2bc647ae8",
        grep_files: "4be8db1734cc85d6",
        grep_files_small: "05b8d97e5c0a8cc4",
        apply_patch: "e1f97bf879dbb12c",
      },
    );
  });

  test("the pins above cover every prompt file of both rooms", () => {
    assertCovers(generated, ["READ_FILE", "LIST_DIR", "GREP_FILES", "APPLY_PATCH"]);
    assertCovers(contractPrompts, ["EXEC_COMMAND", "WRITE_STDIN"]);
  });
});

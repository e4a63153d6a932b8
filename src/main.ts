#!/usr/bin/env bun
/** The `relay` executable: one binary, many subcommands. */
import { buildProgram } from "./cli/program.ts";

await buildProgram().parseAsync(process.argv);

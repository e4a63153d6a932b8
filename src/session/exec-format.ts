/** The text a model reads for an exec_command / write_stdin result (the reference format). */
import type { ExecResult } from "../contracts/executor.ts";

/** `fullOutputNote`: where the whole output is, when `output` is cut (output-spill.ts). */
export function formatExecResult(r: ExecResult, fullOutputNote?: string): string {
  const lines: string[] = [];
  if (r.chunk_id) lines.push(`Chunk ID: ${r.chunk_id}`);
  lines.push(`Wall time: ${r.wall_time_seconds.toFixed(4)} seconds`);
  if (r.exit_code !== undefined) lines.push(`Process exited with code ${r.exit_code}`);
  if (r.process_id !== undefined) lines.push(`Process running with session ID ${r.process_id}`);
  lines.push(`Original token count: ${r.original_token_count}`);
  if (fullOutputNote) lines.push(fullOutputNote);
  lines.push("Output:");
  lines.push(r.output);
  return lines.join("\n");
}

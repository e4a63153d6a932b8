/** What one tool call gives back to the model, shared by the router and code mode. */
export interface ToolCallOutcome {
  output: string;
  success: boolean;
  /** For progress display: the command line or target. */
  display: string;
  /** What a code-mode script's `tools.*` promise resolves with instead of `output` (exec results as JSON). */
  codeModeResult?: unknown;
  /** Where the full text of an output cut for the model was saved. */
  fullOutputPath?: string;
}

import { err, type Result } from "../../util/result.ts";
import type { ActionHandler } from "./server.ts";
export function serveActions(_root: string): Result<ActionHandler> {
  return err("unsupported", "not yet");
}

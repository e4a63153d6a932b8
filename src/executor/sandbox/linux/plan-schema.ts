/** The confinement plan as it crosses from the executor to the helper on the command line. */
import { z } from "zod";

export const ConfinePlanSchema = z.object({
  abi: z.number().int().min(0),
  handledFs: z.number().int().min(0),
  handledNet: z.number().int().min(0),
  scoped: z.number().int().min(0),
  rules: z.array(z.object({ path: z.string().startsWith("/"), access: z.number().int().min(0) })),
  readOnly: z.array(z.string().startsWith("/")),
  filterSockets: z.boolean(),
  gaps: z.array(z.string()),
});

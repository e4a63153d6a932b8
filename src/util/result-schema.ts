import { z } from "zod";

/** Error carried as a value: across the wire and at every tool boundary (see result.ts). */
export const ErrorValueSchema = z.object({
  code: z.string(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type ErrorValue = z.infer<typeof ErrorValueSchema>;

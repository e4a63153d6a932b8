import { z } from "zod";
import { lazySchema } from "./lazy-schema.ts";

/** Error carried as a value: across the wire and at every tool boundary (see result.ts). */
export const ErrorValueSchema = lazySchema(() =>
  z.object({
    code: z.string(),
    message: z.string(),
    data: z.unknown().optional(),
  }),
);
export type ErrorValue = z.infer<typeof ErrorValueSchema>;

/** What a model request cost in tokens: streamed by every provider, summed by sessions, printed in events. */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";

export const TokenUsageSchema = lazySchema(() =>
  z.object({
    input_tokens: z.number().int().min(0),
    output_tokens: z.number().int().min(0),
    total_tokens: z.number().int().min(0),
    cached_input_tokens: z.number().int().min(0).optional(),
  }),
);
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

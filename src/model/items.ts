/**
 * Conversation items in the OpenAI Responses API shape. This is Relay's canonical history
 * format (the same items Codex writes into `response_item` rollout lines), so Codex rollouts
 * can be read back. Unknown item types pass through unchanged (`OtherItem`).
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./items-checks.generated.ts";

export const InputTextSchema = lazySchema(() => z.object({ type: z.literal("input_text"), text: z.string() }));
export const OutputTextSchema = lazySchema(() =>
  z.object({ type: z.literal("output_text"), text: z.string() }).passthrough(),
);
export const InputImageSchema = lazySchema(() =>
  z.object({ type: z.literal("input_image"), image_url: z.string(), detail: z.string().optional() }),
);
export const ContentPartSchema = lazySchema(() => z.union([InputTextSchema, OutputTextSchema, InputImageSchema]));
export type ContentPart = z.infer<typeof ContentPartSchema>;

export const RoleSchema = lazySchema(() => z.enum(["user", "assistant", "system", "developer"]));
export type Role = z.infer<typeof RoleSchema>;

export const MessageItemSchema = lazySchema(() =>
  z
    .object({
      type: z.literal("message"),
      id: z.string().optional(),
      role: RoleSchema,
      content: z.array(ContentPartSchema),
    })
    .passthrough(),
);

export const FunctionCallItemSchema = lazySchema(() =>
  z
    .object({
      type: z.literal("function_call"),
      id: z.string().optional(),
      name: z.string(),
      /** JSON text exactly as the model produced it. */
      arguments: z.string(),
      call_id: z.string(),
    })
    .passthrough(),
);

export const FunctionCallOutputItemSchema = lazySchema(() =>
  z
    .object({
      type: z.literal("function_call_output"),
      call_id: z.string(),
      output: z.string(),
    })
    .passthrough(),
);

/** Freeform tools (e.g. code mode `exec`): raw text input rather than JSON arguments. */
export const CustomToolCallItemSchema = lazySchema(() =>
  z
    .object({
      type: z.literal("custom_tool_call"),
      id: z.string().optional(),
      name: z.string(),
      input: z.string(),
      call_id: z.string(),
    })
    .passthrough(),
);

export const CustomToolCallOutputItemSchema = lazySchema(() =>
  z.object({ type: z.literal("custom_tool_call_output"), call_id: z.string(), output: z.string() }).passthrough(),
);

export const ReasoningItemSchema = lazySchema(() =>
  z
    .object({
      type: z.literal("reasoning"),
      id: z.string().optional(),
      summary: z.array(z.object({ type: z.string(), text: z.string() })).default([]),
      encrypted_content: z.string().nullable().optional(),
    })
    .passthrough(),
);

export const OtherItemSchema = lazySchema(() => z.object({ type: z.string() }).passthrough());

const KnownItemSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    MessageItemSchema,
    FunctionCallItemSchema,
    FunctionCallOutputItemSchema,
    CustomToolCallItemSchema,
    CustomToolCallOutputItemSchema,
    ReasoningItemSchema,
  ]),
);

export const ResponseItemSchema = lazySchema(() => z.union([KnownItemSchema, OtherItemSchema]));

/**
 * The schemas of a model's output items, by the names of their generated checks
 * (npm run build:validators writes them to items-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, { responseItem: ResponseItemSchema });
export type ResponseItem = z.infer<typeof KnownItemSchema> | (z.infer<typeof OtherItemSchema> & { type: string });
export type MessageItem = z.infer<typeof MessageItemSchema>;
export type FunctionCallItem = z.infer<typeof FunctionCallItemSchema>;
export type FunctionCallOutputItem = z.infer<typeof FunctionCallOutputItemSchema>;
export type CustomToolCallItem = z.infer<typeof CustomToolCallItemSchema>;
export type ReasoningItem = z.infer<typeof ReasoningItemSchema>;

export function userMessage(text: string): MessageItem {
  return { type: "message", role: "user", content: [{ type: "input_text", text }] };
}

export function developerMessage(text: string): MessageItem {
  return { type: "message", role: "developer", content: [{ type: "input_text", text }] };
}

export function assistantMessage(text: string): MessageItem {
  return { type: "message", role: "assistant", content: [{ type: "output_text", text }] };
}

/** Concatenated text of a message's text parts (images ignored). */
export function messageText(item: MessageItem): string {
  return item.content
    .filter((c): c is Extract<ContentPart, { text: string }> => "text" in c)
    .map((c) => c.text)
    .join("");
}

/** Builds the model client a config names. */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { createChatClient } from "./chat.ts";
import type { ModelClient } from "./client.ts";
import { RetryOverridesSchema, type TransportOptions } from "./http.ts";
import { createResponsesClient, ReasoningOptionsSchema } from "./responses.ts";
import { createScriptedClient } from "./scripted.ts";

export const DEFAULT_BASE_URL = "https://api.openai.com/v1";
export const DEFAULT_API_KEY_ENV = "OPENAI_API_KEY";

/** The model APIs, as a list a command line's choices take without building the schema. */
export const MODEL_PROVIDERS = ["openai-responses", "openai-chat", "scripted"] as const;
export const ModelProviderSchema = lazySchema(() => z.enum(MODEL_PROVIDERS));
export type ModelProvider = z.infer<typeof ModelProviderSchema>;

/** The fields, without the cross-field check (for `.extend`/`.pick` by config code). */
export const ModelConfigFieldsSchema = lazySchema(() =>
  z.object({
    provider: ModelProviderSchema,
    model: z.string().min(1),
    /** Default: the OPENAI_BASE_URL environment variable, else https://api.openai.com/v1. */
    baseUrl: z.url().optional(),
    apiKey: z.string().optional(),
    /** Environment variable holding the API key; default OPENAI_API_KEY. */
    apiKeyEnv: z.string().min(1).optional(),
    /** JSON script file of the `scripted` provider. */
    scriptPath: z.string().min(1).optional(),
    maxRetries: z.number().int().min(0).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /** Responses API only: reasoning effort / summary. */
    reasoning: ReasoningOptionsSchema.optional(),
    /** Backoff overrides (tests use tiny delays). */
    retry: RetryOverridesSchema.optional(),
    /** Server silence that counts as a dropped stream; default 300 s. */
    idleTimeoutMs: z.number().int().min(0).optional(),
  }),
);

export const ModelConfigSchema = lazySchema(() =>
  ModelConfigFieldsSchema.refine((c) => c.provider !== "scripted" || c.scriptPath !== undefined, {
    message: "the scripted provider needs scriptPath (a JSON script file)",
    path: ["scriptPath"],
  }),
);
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/** True for OpenAI's own API, which always needs a key; local servers usually need none. */
export function isOpenAiHost(baseUrl: string): boolean {
  try {
    return new URL(baseUrl).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

/**
 * A missing key is not an error here: it surfaces as ModelError("auth") at the first
 * `stream()` call, so that commands which never sample still work.
 */
export function createModelClient(
  config: ModelConfig,
  env: Record<string, string | undefined> = process.env,
): ModelClient {
  if (config.provider === "scripted") return createScriptedClient({ scriptPath: config.scriptPath! });
  const baseUrl = config.baseUrl ?? nonEmpty(env.OPENAI_BASE_URL) ?? DEFAULT_BASE_URL;
  const apiKeyEnv = config.apiKeyEnv ?? DEFAULT_API_KEY_ENV;
  const apiKey = config.apiKey ?? nonEmpty(env[apiKeyEnv]);
  const transport: TransportOptions = { baseUrl, model: config.model, apiKeyEnv, requireApiKey: isOpenAiHost(baseUrl) };
  if (apiKey !== undefined) transport.apiKey = apiKey;
  if (config.headers) transport.headers = config.headers;
  if (config.idleTimeoutMs !== undefined) transport.idleTimeoutMs = config.idleTimeoutMs;
  const retry = { ...config.retry, ...(config.maxRetries !== undefined ? { maxRetries: config.maxRetries } : {}) };
  if (Object.keys(retry).length > 0) transport.retry = retry;
  if (config.provider === "openai-chat") return createChatClient(transport);
  return createResponsesClient(config.reasoning ? { ...transport, reasoning: config.reasoning } : transport);
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

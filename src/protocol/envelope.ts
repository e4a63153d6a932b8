/** The wire envelope shared by every Relay peer. */
import { z } from "zod";
import { ErrorValueSchema } from "../util/result-schema.ts";

/** u64 on the wire; JSON numbers keep integers exact up to 2^53-1, so ids stay in that range. */
export const RequestIdSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export type RequestId = z.infer<typeof RequestIdSchema>;

export const RequestSchema = z.object({
  type: z.literal("request"),
  id: RequestIdSchema,
  method: z.string().min(1),
  params: z.unknown().optional(),
});

export const ResultValueSchema = z.union([
  z.object({ ok: z.unknown() }).strict(),
  z.object({ error: ErrorValueSchema }).strict(),
]);

export const ResponseSchema = z.object({
  type: z.literal("response"),
  id: RequestIdSchema,
  result: ResultValueSchema,
});

export const NotificationSchema = z.object({
  type: z.literal("notification"),
  method: z.string().min(1),
  params: z.unknown().optional(),
});

export const CancelSchema = z.object({
  type: z.literal("cancel"),
  id: RequestIdSchema,
});

export const EnvelopeSchema = z.discriminatedUnion("type", [RequestSchema, ResponseSchema, NotificationSchema, CancelSchema]);

export type RequestEnvelope = z.infer<typeof RequestSchema>;
export type ResponseEnvelope = z.infer<typeof ResponseSchema>;
export type NotificationEnvelope = z.infer<typeof NotificationSchema>;
export type CancelEnvelope = z.infer<typeof CancelSchema>;
export type Envelope = z.infer<typeof EnvelopeSchema>;

/** Stable error codes used by the peer itself; domain code adds its own. */
export const ErrorCode = {
  InvalidParams: "invalid_params",
  InvalidResult: "invalid_result",
  MethodNotFound: "method_not_found",
  Internal: "internal",
  Cancelled: "cancelled",
  PeerClosed: "peer_closed",
  FrameTooLarge: "frame_too_large",
  InvalidMessage: "invalid_message",
  Timeout: "timeout",
} as const;

/** The wire envelope shared by every Relay peer. */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { ErrorValueSchema } from "../util/result-schema.ts";
import * as checks from "./envelope-checks.generated.ts";
import { MAX_REQUEST_ID } from "./wire-id.ts";

/**
 * u64 on the wire. A number up to 2^53-1 (every id this side mints), a bigint above: the peer
 * reads such an id exactly from the raw text (wire-id.ts) and writes it back as the same token.
 */
export const RequestIdSchema = lazySchema(() =>
  z.union([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.bigint().min(0n).max(MAX_REQUEST_ID)]),
);
export type RequestId = z.infer<typeof RequestIdSchema>;

export const RequestSchema = lazySchema(() =>
  z.object({
    type: z.literal("request"),
    id: RequestIdSchema,
    method: z.string().min(1),
    params: z.unknown().optional(),
  }),
);

export const ResultValueSchema = lazySchema(() =>
  z.union([z.object({ ok: z.unknown() }).strict(), z.object({ error: ErrorValueSchema }).strict()]),
);

/**
 * The schemas checked through fast-parse here (every answer's Result), by the names of their
 * generated checks (npm run build:validators writes them to envelope-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, { resultValue: ResultValueSchema });

export const ResponseSchema = lazySchema(() =>
  z.object({
    type: z.literal("response"),
    id: RequestIdSchema,
    result: ResultValueSchema,
  }),
);

export const NotificationSchema = lazySchema(() =>
  z.object({
    type: z.literal("notification"),
    method: z.string().min(1),
    params: z.unknown().optional(),
  }),
);

export const CancelSchema = lazySchema(() =>
  z.object({
    type: z.literal("cancel"),
    id: RequestIdSchema,
  }),
);

export const EnvelopeSchema = lazySchema(() =>
  z.discriminatedUnion("type", [RequestSchema, ResponseSchema, NotificationSchema, CancelSchema]),
);

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
  /** A request reused the id of a request still being handled: it was not run. */
  DuplicateId: "duplicate_id",
  Timeout: "timeout",
} as const;

/** A code the peer itself may answer any method with (bad params, cancelled, closed, ...). */
export type PeerErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

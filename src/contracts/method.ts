/**
 * Typed method and notification contracts: one zod schema pair per wire method, and the closed
 * list of error codes the method may answer with besides the peer's own (envelope.ts's
 * ErrorCode: invalid params, cancelled, timeout, ...). A handler that returns any other code is
 * a type error, and at run time it is answered as `internal` (protocol/handler-table.ts).
 */
import type { z } from "zod";

export interface MethodSpec<
  P extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
  E extends string = string,
> {
  readonly name: string;
  readonly params: P;
  readonly result: R;
  /** The codes this method's own failures carry (the peer's codes come on top). */
  readonly errors: readonly E[];
}

/** The codes a method's handler may fail with besides the peer's: `MethodErrors<typeof Spec>`. */
export type MethodErrors<S> = S extends MethodSpec<z.ZodType, z.ZodType, infer E> ? E : never;

export interface NotificationSpec<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly params: P;
}

export function defineMethod<P extends z.ZodType, R extends z.ZodType, const E extends string = never>(
  name: string,
  params: P,
  result: R,
  errors: readonly E[],
): MethodSpec<P, R, E> {
  return { name, params, result, errors };
}

export function defineNotification<P extends z.ZodType>(name: string, params: P): NotificationSpec<P> {
  return { name, params };
}

type SpecTable = Record<string, MethodSpec | NotificationSpec>;

/** The params and result schemas of a table of specs, by `<key>Params` and `<key>Result`. */
export type SpecSchemas<T extends SpecTable> = {
  [K in keyof T & string as `${K}Params`]: T[K]["params"];
} & {
  [K in keyof T & string as T[K] extends MethodSpec ? `${K}Result` : never]: T[K] extends MethodSpec
    ? T[K]["result"]
    : never;
};

/**
 * The schemas of `specs` under the names their generated checks take (`executeParams`,
 * `executeResult`, ...): what a module that defines methods hands to util/fast-parse.ts's
 * withChecks. Reads the specs only; a lazy schema stays unbuilt.
 */
export function specSchemas<T extends SpecTable>(specs: T): SpecSchemas<T> {
  const out: Record<string, z.ZodType> = {};
  for (const [key, spec] of Object.entries(specs)) {
    out[`${key}Params`] = spec.params;
    if ("result" in spec) out[`${key}Result`] = spec.result;
  }
  return out as SpecSchemas<T>;
}

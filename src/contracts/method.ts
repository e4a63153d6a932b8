/** Typed method and notification contracts: one zod schema pair per wire method. */
import type { z } from "zod";

export interface MethodSpec<P extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly params: P;
  readonly result: R;
}

export interface NotificationSpec<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly params: P;
}

export function defineMethod<P extends z.ZodType, R extends z.ZodType>(
  name: string,
  params: P,
  result: R,
): MethodSpec<P, R> {
  return { name, params, result };
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

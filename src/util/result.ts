// Type-only: the sandbox helper imports this module once per command and must not load zod.
import type { ErrorValue } from "./result-schema.ts";

export type { ErrorValue };

/** An error whose code is one of `C` (a method's declared codes, say). */
export type Failure<C extends string = string> = { error: ErrorValue & { code: C } };

/**
 * `{ok: value}` or `{error: {code, message}}`; never thrown across a process boundary. `C`
 * narrows the codes it may fail with (a wire method's closed list; any string by default).
 */
export type Result<T, C extends string = string> = { ok: T } | Failure<C>;

export function ok<T>(value: T): { ok: T } {
  // JSON drops undefined members, which would make `{ok: undefined}` arrive as `{}`.
  return { ok: (value === undefined ? null : value) as T };
}

export function err<C extends string>(code: C, message: string, data?: unknown): Failure<C> {
  return data === undefined ? { error: { code, message } } : { error: { code, message, data } };
}

export function isErr<T, C extends string>(r: Result<T, C>): r is Failure<C> {
  return "error" in r;
}

/** Unwraps for callers that want an exception (CLI top level, tests). */
export function unwrap<T>(r: Result<T>): T {
  if (isErr(r)) throw new ResultError(r.error);
  return r.ok;
}

export class ResultError extends Error {
  readonly code: string;
  readonly data: unknown;
  constructor(e: ErrorValue) {
    super(e.message);
    this.name = `ResultError(${e.code})`;
    this.code = e.code;
    this.data = e.data;
  }
}

export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

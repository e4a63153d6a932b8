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

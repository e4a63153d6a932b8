/** The roles of an infty run and their names: solver, director, verifier-1..N. */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import type { RoleKind } from "../resolve.ts";

export const RoleNameSchema = lazySchema(() =>
  z.string().regex(/^(solver|director|verifier-\d+)$/, "must be solver, director or verifier-<n>"),
);

/** What a role is (config/resolve.ts's RoleKind); every verifier-<n> is a "verifier". */
export type { RoleKind };

export function roleKind(role: string): RoleKind {
  return role === "solver" || role === "director" ? role : "verifier";
}

/** verifier-3 -> 3; 0 for the Solver and the Director. */
export function verifierNumber(role: string): number {
  return roleKind(role) === "verifier" ? Number(role.split("-")[1] ?? 0) : 0;
}

/** Every role of a run with `verifiers` Verifiers, in the order their sessions open. */
export function roleNames(verifiers: number): string[] {
  return ["solver", "director", ...Array.from({ length: verifiers }, (_, i) => `verifier-${i + 1}`)];
}

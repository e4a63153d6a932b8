/**
 * Predicates that schemas refine with and that generated checks (scripts/validators/) call by
 * name, so a check reaches them without building the zod schema that holds them. Each takes the
 * already type-checked value and has no other input.
 */

/** An absolute http:// or https:// URL. */
export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** An absolute path, POSIX (`/…`) or Windows (`C:\…`, `C:/…`). */
export function isAbsolutePath(p: string): boolean {
  return p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p);
}

/**
 * Postgres URLs as relay takes them (`postgres://` or `postgresql://`) and shows them (the
 * password hidden). No database package here: the CLI and config check URLs before anything
 * that connects is loaded.
 */

/** What a Postgres URL starts with. */
export const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** Whether `spec` names a Postgres database (`postgres://` or `postgresql://`). */
export function isPostgresUrl(spec: string): boolean {
  return POSTGRES_URL.test(spec);
}

/** `url` with its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://(unparseable url)";
  }
}

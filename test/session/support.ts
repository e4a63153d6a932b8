import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** Runs `fn` with a fresh real temp directory as RELAY_HOME, removed afterwards. */
export async function withHome<T>(fn: (home: string) => Promise<T>): Promise<T> {
  const home = await realpath(await mkdtemp(path.join(os.tmpdir(), "relay-home-")));
  try {
    return await fn(home);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** The `ok` value of a Result, or a failed assertion showing the error. */
export function must<T>(r: { ok: T } | { error: { code: string; message: string } }): T {
  if ("error" in r) throw new Error(`expected ok, got ${r.error.code}: ${r.error.message}`);
  return r.ok;
}

export function mustErr(r: { ok: unknown } | { error: { code: string; message: string } }): {
  code: string;
  message: string;
  data?: unknown;
} {
  if (!("error" in r)) throw new Error(`expected an error, got ok: ${JSON.stringify(r.ok)}`);
  return r.error;
}

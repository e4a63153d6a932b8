import { existsSync } from "node:fs";
/** A skip reason that is also printed, so a skipped suite never passes silently in a runner that hides it. */
export function skipBecause(suite: string, reason: string | false | undefined): string | false {
  if (reason) process.stderr.write(`skipping ${suite}: ${reason}\n`);
  return reason || false;
}

/**
 * Why sandboxed commands cannot run in this test process's runtime, or false when they can: the
 * built-in sandbox needs Bun (its FFI), so under Deno and Node only bubblewrap confines commands.
 */
export function noSandboxHere(): string | false {
  if (process.versions.bun) return false;
  const onPath = (process.env.PATH ?? "").split(":").some((d) => d !== "" && existsSync(`${d}/bwrap`));
  return onPath
    ? false
    : `${(globalThis as { Deno?: unknown }).Deno ? "Deno" : "Node"} has no built-in sandbox (it needs Bun's FFI) and bubblewrap is not installed`;
}

/**
 * For a test that counts the schemas its process built (src/util/lazy-schema.ts): why it cannot
 * tell here, when another test file in the same global built some before it ran, or false.
 */
export function schemasBuiltElsewhere(builtAtStart: number): string | false {
  return skipBecause(
    "a count of built schemas",
    builtAtStart > 0 &&
      "another test file built schemas in this process; run this one in a global of its own (npm test's --parallel does)",
  );
}

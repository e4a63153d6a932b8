/**
 * A zod schema built on its first use rather than when its module loads. zod v4 builds every
 * schema's methods as the schema is made (about 25 µs each in a compiled binary), so a module of
 * wire schemas costs milliseconds in every process that imports it, even one that only ever
 * parses a few of them: the executor and the code-mode host import all their methods' schemas
 * and answer their first request long before most are used (docs/performance.md).
 *
 * The value stands in for the schema itself (same type, same methods, usable inside other
 * schemas), so callers do not change. Only identity differs: the stand-in is not `===` the
 * schema it builds.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";

/**
 * zod's JIT compiles a fast parser for each object schema on its first parse. A relay process
 * parses most schemas a few times (a config, a handful of wire messages per tool call), so the
 * compile costs more than it saves: the config's first parse takes 6.3 ms instead of 8.6 at
 * start-up (medians of 15, compiled), and the per-tool-call path shows no difference. Every
 * module that builds schemas imports this one, so the setting is in place before any parse.
 */
z.config({ jitless: true });

let built = 0;

/**
 * For tests of whole processes (test/session/schemas-built.test.ts): where this variable names a
 * directory, the process writes there, as it exits, how many schemas it built and where the
 * first was asked for.
 */
const REPORT_DIR = process.env.RELAY_TEST_SCHEMAS_BUILT_DIR;
let firstBuiltAt: string | undefined;
if (REPORT_DIR)
  process.once("exit", () => {
    const line = JSON.stringify({ argv: process.argv.slice(2), built, first: firstBuiltAt });
    writeFileSync(path.join(REPORT_DIR, `${process.pid}.json`), line);
  });

/** How many lazy schemas this process has built so far (for tests of what loading a module builds). */
export function lazySchemasBuilt(): number {
  return built;
}

export function lazySchema<T extends z.ZodType>(build: () => T): T {
  let schema: T | undefined;
  const real = (): T => {
    if (schema === undefined) {
      if (REPORT_DIR && firstBuiltAt === undefined) firstBuiltAt = new Error("built here").stack;
      schema = build();
      built++;
    }
    return schema;
  };
  // The target stays an empty object; every trap answers from the built schema.
  return new Proxy({} as T, {
    get: (_target, key) => Reflect.get(real(), key, real()),
    set: (_target, key, value) => Reflect.set(real(), key, value),
    has: (_target, key) => Reflect.has(real(), key),
    ownKeys: () => Reflect.ownKeys(real()),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
    getOwnPropertyDescriptor: (_target, key) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), key);
      // A proxy may not report a non-configurable property its (empty) target lacks.
      return d === undefined ? undefined : { ...d, configurable: true };
    },
  });
}

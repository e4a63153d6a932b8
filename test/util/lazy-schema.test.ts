/** util/lazy-schema.ts: a schema built on first use behaves as the schema it builds, wherever zod or relay uses it. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { ExecCommandRequestSchema, ExecutorMethods } from "../../src/contracts/executor.ts";
import { lazySchema, lazySchemasBuilt } from "../../src/util/lazy-schema.ts";

const buildPoint = () =>
  z.object({ x: z.number().int(), y: z.number().int().default(0), tag: z.enum(["a", "b"]).optional() });

function counted<T extends z.ZodType>(build: () => T): { schema: T; builds: () => number } {
  let n = 0;
  const schema = lazySchema(() => {
    n++;
    return build();
  });
  return { schema, builds: () => n };
}

describe("lazySchema", () => {
  test("builds nothing until first used, then once", () => {
    const before = lazySchemasBuilt();
    const { schema, builds } = counted(buildPoint);
    const inner = lazySchema(() => z.object({ p: schema }));
    assert.equal(builds(), 0);
    assert.equal(lazySchemasBuilt(), before);
    assert.deepEqual(inner.parse({ p: { x: 1 } }), { p: { x: 1, y: 0 } });
    assert.deepEqual(schema.parse({ x: 2, y: 3 }), { x: 2, y: 3 });
    assert.equal(builds(), 1);
    assert.equal(lazySchemasBuilt(), before + 2);
  });

  test("parses, refuses and reports issues exactly as the eager schema", () => {
    const lazy = lazySchema(buildPoint);
    const eager = buildPoint();
    for (const input of [
      { x: 1 },
      { x: 1.5 },
      { x: "1" },
      { x: 1, tag: "c" },
      null,
      [],
      { x: 1, y: 2, tag: "b", extra: true },
    ]) {
      const a = lazy.safeParse(input);
      const b = eager.safeParse(input);
      assert.equal(a.success, b.success, JSON.stringify(input));
      assert.deepEqual(a.success ? a.data : a.error.issues, b.success ? b.data : b.error.issues, JSON.stringify(input));
    }
  });

  test("works where zod looks inside it: nested, unions, derived schemas, instanceof, JSON Schema", () => {
    const point = lazySchema(buildPoint);
    const shape = lazySchema(() =>
      z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("dot"), at: point }),
        z.object({ kind: z.literal("line"), from: point, to: point }),
      ]),
    );
    assert.deepEqual(shape.parse({ kind: "line", from: { x: 1 }, to: { x: 2, y: 2 } }), {
      kind: "line",
      from: { x: 1, y: 0 },
      to: { x: 2, y: 2 },
    });
    assert.equal(shape.safeParse({ kind: "dot", at: { x: "no" } }).success, false);
    assert.ok(point instanceof z.ZodObject);
    assert.deepEqual(Object.keys(point.shape), ["x", "y", "tag"]);
    assert.deepEqual(point.extend({ z: z.number() }).parse({ x: 1, z: 3 }), { x: 1, y: 0, z: 3 });
    assert.deepEqual(point.pick({ x: true }).parse({ x: 4, y: 9 }), { x: 4 });
    assert.equal(point.optional().parse(undefined), undefined);
    assert.deepEqual(z.toJSONSchema(point), z.toJSONSchema(buildPoint()));
    assert.ok("shape" in point && Reflect.ownKeys(point).length > 0);
  });

  test("a build that throws throws at the use, and again at the next", () => {
    const broken = lazySchema((): z.ZodString => {
      throw new Error("bad schema");
    });
    assert.throws(() => broken.parse("x"), /bad schema/);
    assert.throws(() => broken.safeParse("x"), /bad schema/);
  });

  test("the executor's wire schemas: defaults applied and bad requests refused as before", () => {
    const r = ExecutorMethods.exec.params.parse({ command: ["true"], cwd: "/tmp", env: {} });
    assert.equal(r.tty, false);
    assert.deepEqual(r.exec_approval_requirement, { type: "skip" });
    assert.equal(r.sandbox.mode, "danger-full-access");
    const bad = ExecCommandRequestSchema.safeParse({ command: [], cwd: "relative", env: {} });
    assert.equal(bad.success, false);
    assert.match(JSON.stringify(bad.error?.issues), /must not be empty/);
    assert.match(JSON.stringify(bad.error?.issues), /cwd must be an absolute path/);
  });
});

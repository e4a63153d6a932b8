/** The helper's zod-free plan check must agree with ConfinePlanSchema, the plan's definition. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parsePlan, planProblem, warmRequestProblem } from "../../src/sandbox/linux/plan-guard.ts";
import { ConfinePlanSchema, WarmRequestSchema } from "../../src/sandbox/linux/plan-schema.ts";

const valid = {
  abi: 7,
  handledFs: 0xffff,
  handledNet: 3,
  scoped: 3,
  rules: [
    { path: "/", access: 13 },
    { path: "/work/ws", access: 0xff3f },
  ],
  readOnly: ["/work/ws/.git"],
  hide: ["/run/docker.sock"],
  filterSockets: true,
  gaps: [],
  restoreEnv: { BUN_JSC_useConcurrentJIT: null, KEPT: "1" },
};

const corrupt: Array<[string, unknown]> = [
  ["null", null],
  ["an array", [valid]],
  ["a string", "plan"],
  ["negative abi", { ...valid, abi: -1 }],
  ["fractional abi", { ...valid, abi: 1.5 }],
  ["abi as text", { ...valid, abi: "7" }],
  ["a mask over 32 bits", { ...valid, handledFs: 2 ** 33 }],
  ["a negative mask", { ...valid, scoped: -1 }],
  ["a missing handledNet", { ...valid, handledNet: undefined }],
  ["rules not an array", { ...valid, rules: {} }],
  ["a relative rule path", { ...valid, rules: [{ path: "etc", access: 1 }] }],
  ["a rule without access", { ...valid, rules: [{ path: "/" }] }],
  ["a rule that is a string", { ...valid, rules: ["/"] }],
  ["a relative read-only path", { ...valid, readOnly: [".git"] }],
  ["a relative socket to hide", { ...valid, hide: ["run/docker.sock"] }],
  ["hide as a string", { ...valid, hide: "/run/docker.sock" }],
  ["filterSockets as a number", { ...valid, filterSockets: 1 }],
  ["gaps with a number", { ...valid, gaps: [1] }],
  ["gaps missing", { ...valid, gaps: undefined }],
  ["restoreEnv as an array", { ...valid, restoreEnv: ["X"] }],
  ["a restoreEnv value that is a number", { ...valid, restoreEnv: { X: 1 } }],
  ["a container that is a number", { ...valid, container: 42 }],
  ["a container pid of 1", { ...valid, container: { pid: 1, start: "5" } }],
  ["a container pid as text", { ...valid, container: { pid: "99", start: "5" } }],
  ["a container start that is not decimal", { ...valid, container: { pid: 99, start: "5; rm" } }],
  ["a container without start", { ...valid, container: { pid: 99 } }],
];

describe("sandbox plan guard", () => {
  test("a valid plan passes both checks and parses to the same value", () => {
    assert.equal(planProblem(valid), undefined);
    assert.ok(ConfinePlanSchema.safeParse(valid).success);
    assert.deepEqual(parsePlan(JSON.stringify(valid)), { ok: valid });
    const contained = { ...valid, container: { pid: 4242, start: "123456" } };
    assert.equal(planProblem(contained), undefined);
    assert.ok(ConfinePlanSchema.safeParse(contained).success);
  });

  for (const [name, value] of corrupt) {
    test(`${name}: refused by the guard and by the schema`, () => {
      assert.equal(ConfinePlanSchema.safeParse(value).success, false, "schema");
      assert.match(planProblem(value) ?? "", /./, "guard");
    });
  }

  test("a plan without restoreEnv (older executor) gets an empty one, as the schema's default", () => {
    const { restoreEnv: _, ...older } = valid;
    assert.deepEqual(parsePlan(JSON.stringify(older)), { ok: { ...older, restoreEnv: {} } });
    assert.deepEqual(ConfinePlanSchema.parse(older).restoreEnv, {});
  });

  test("a plan without hide (older executor) hides nothing, as the schema's default", () => {
    const { hide: _, ...older } = valid;
    assert.deepEqual(parsePlan(JSON.stringify(older)), { ok: { ...older, hide: [] } });
    assert.deepEqual(ConfinePlanSchema.parse(older).hide, []);
  });

  test("bad JSON and a bad shape are told apart in the message", () => {
    assert.match((parsePlan("{abi:") as { problem: string }).problem, /not valid JSON/);
    assert.match((parsePlan('{"abi":7}') as { problem: string }).problem, /malformed: handledFs must be a 32-bit mask/);
  });

  const request = { plan: valid, argv: ["sh", "-c", "true"], env: { PATH: "/bin" }, cwd: "/work/ws" };
  const badRequests: Array<[string, unknown]> = [
    ["no plan", { ...request, plan: undefined }],
    ["a corrupt plan", { ...request, plan: { ...valid, abi: -1 } }],
    ["an empty argv", { ...request, argv: [] }],
    ["argv with a number", { ...request, argv: ["sh", 1] }],
    ["env with a number", { ...request, env: { X: 1 } }],
    ["env as an array", { ...request, env: ["X=1"] }],
    ["a relative cwd", { ...request, cwd: "ws" }],
  ];
  test("a warm helper's request: the guard and WarmRequestSchema agree", () => {
    assert.equal(warmRequestProblem(request), undefined);
    assert.ok(WarmRequestSchema.safeParse(request).success);
    for (const [name, value] of badRequests) {
      assert.equal(WarmRequestSchema.safeParse(value).success, false, `schema: ${name}`);
      assert.match(warmRequestProblem(value) ?? "", /./, `guard: ${name}`);
    }
  });
});

/**
 * What each subcommand loads at start-up. relay re-execs itself for every executor, code-mode
 * host and sandboxed command, so a module a subcommand imports eagerly is paid for on every
 * spawn. The compiled binary is split into chunks at each dynamic `import()`, so the modules a
 * process parses are: the static closure of src/main.ts, plus that of the one subcommand module
 * src/cli/program.ts loads for its name. This test walks those closures (the compiler's parser
 * reads the imports; `import type` loads nothing) and fails when one reaches what that
 * subcommand does not need.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, test } from "node:test";
import { buildProgram } from "../src/cli/program.ts";
import { REPO_ROOT } from "./support/paths.ts";

const ts = createRequire(import.meta.url)("typescript") as typeof import("typescript");

const SRC = path.join(REPO_ROOT, "src");

/** Each module's import list, read once: the closures below walk the same modules many times. */
const importsOf = new Map<string, string[]>();

/** The specifiers a module loads when it is evaluated: its static imports and re-exports, not type-only ones. */
function staticImports(file: string): string[] {
  const known = importsOf.get(file);
  if (known !== undefined) return known;
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  for (const s of source.statements) {
    if (ts.isImportDeclaration(s) && !s.importClause?.isTypeOnly && ts.isStringLiteral(s.moduleSpecifier))
      out.push(s.moduleSpecifier.text);
    if (ts.isExportDeclaration(s) && !s.isTypeOnly && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier))
      out.push(s.moduleSpecifier.text);
  }
  importsOf.set(file, out);
  return out;
}

/** A package's name from a bare specifier (`@scope/name/sub` → `@scope/name`). */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** Every src module and npm package `entries` load before any dynamic import runs. */
function closure(...entries: string[]): { modules: Set<string>; packages: Set<string>; builtins: Set<string> } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const builtins = new Set<string>();
  const todo = entries.map((e) => path.join(SRC, e));
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith(".")) {
        const target = path.resolve(path.dirname(file), spec);
        assert.ok(existsSync(target), `${path.relative(REPO_ROOT, file)} imports ${spec}, which does not exist`);
        todo.push(target);
      } else if (spec.startsWith("node:")) builtins.add(spec);
      else if (!spec.startsWith("bun:")) packages.add(packageOf(spec));
    }
  }
  return { modules: new Set([...modules].map((m) => path.relative(SRC, m))), packages, builtins };
}

/** Subcommand name → the module program.ts loads for it (read from its table, so a moved module is followed). */
const SUBCOMMAND_MODULES = new Map(
  [
    ...readFileSync(path.join(SRC, "cli/program.ts"), "utf8").matchAll(
      /name: "([\w-]+)"[^\n]*import\("\.\/([^"]+)"\)/g,
    ),
  ].map((m) => [m[1], `cli/${m[2]}`] as const),
);

/** The start-up closure of `relay <name>`: main.ts, the CLI core (entry.ts, imported by main.ts), the command tree and that subcommand's module. */
function subcommand(name: string) {
  const module = SUBCOMMAND_MODULES.get(name);
  assert.ok(module !== undefined, `cli/program.ts loads no module for ${name}`);
  return closure("main.ts", "cli/entry.ts", "cli/program.ts", module);
}

const HEAVY = {
  quickjs: ["quickjs-emscripten-core", "@jitl/quickjs-singlefile-mjs-release-sync"],
  db: ["kysely", "pg"],
  git: ["isomorphic-git", "diff"],
  archives: ["tar-stream", "fflate", "@bokuweb/zstd-wasm"],
  toml: ["smol-toml"],
  /** The MCP SDK: imported (await import) only once a session has an MCP server to start. */
  mcp: ["@modelcontextprotocol/sdk"],
  /** SKILL.md front matter (workspace/front-matter.ts): imported on the first SKILL.md read. */
  yaml: ["yaml"],
};

function assertNoPackages(what: string, packages: Set<string>, banned: string[]): void {
  const found = banned.filter((p) => packages.has(p));
  assert.deepEqual(
    found,
    [],
    `${what} loads ${found.join(", ")} at start-up: import it where it is used (await import(...))`,
  );
}

/** main.ts names the sandbox helper's argument, and entry.ts reads which name the binary has: two small modules of lower rooms. */
const HELPER_ARG = "sandbox/linux/helper-arg.ts";
const PERSONALITY = "package/personality.ts";

function assertNoRooms(what: string, modules: Set<string>, rooms: string[]): void {
  const found = [...modules]
    .filter((m) => m !== HELPER_ARG && m !== PERSONALITY && rooms.some((r) => m.startsWith(`${r}/`)))
    .sort();
  assert.deepEqual(found, [], `${what} loads modules of ${rooms.join(", ")} at start-up`);
}

/** Functions of `z` that build no schema. */
const Z_NOT_BUILDERS = new Set(["infer", "input", "output", "config"]);

const rootOf = (node: import("typescript").Expression): import("typescript").Expression => {
  let x = node;
  while (ts.isCallExpression(x) || ts.isPropertyAccessExpression(x)) x = x.expression;
  return x;
};

/**
 * Lines of `text` that build a zod schema while the module loads: a call chain rooted at `z` (or
 * derived from a `…Schema` constant) outside every function, so outside `lazySchema(() => …)`.
 */
function eagerSchemaLines(text: string): number[] {
  const source = ts.createSourceFile("m.ts", text, ts.ScriptTarget.Latest, true);
  const found: number[] = [];
  const visit = (node: import("typescript").Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isCallExpression(node)) {
      const root = rootOf(node);
      const callee = node.expression;
      const method = ts.isPropertyAccessExpression(callee) ? callee.name.text : "";
      const fromZ =
        ts.isIdentifier(root) &&
        root.text === "z" &&
        !(ts.isPropertyAccessExpression(callee) && callee.expression === root && Z_NOT_BUILDERS.has(method));
      const derived =
        ts.isIdentifier(root) &&
        /Schema$/.test(root.text) &&
        root.text !== "lazySchema" &&
        !/^(safe)?[pP]arse/.test(method);
      if (fromZ || derived) {
        found.push(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1);
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const eagerSchemasOf = new Map<string, string[]>();

const eagerSchemas = (module: string): string[] => {
  let found = eagerSchemasOf.get(module);
  if (found === undefined) {
    found = eagerSchemaLines(readFileSync(path.join(SRC, module), "utf8")).map((line) => `${module}:${line}`);
    eagerSchemasOf.set(module, found);
  }
  return found;
};

describe("start-up import graph", () => {
  test("the CLI core loads no package; the command tree (relay --version, every subcommand before its own module) adds commander alone", () => {
    assert.deepEqual([...closure("main.ts", "cli/entry.ts").packages], []);
    const { modules, packages } = closure("main.ts", "cli/entry.ts", "cli/program.ts");
    assert.deepEqual([...packages].sort(), ["@commander-js/extra-typings"]);
    assert.ok(modules.has(HELPER_ARG) && modules.has(PERSONALITY));
    assertNoRooms("the CLI core", modules, [
      "session",
      "executor",
      "codemode",
      "model",
      "memories",
      "infty",
      "package",
      "protocol",
      "rollout",
    ]);
    // 16 since cli/write-direct.ts (commander's output); 17 since util/embedded-file.ts, with which
    // main.ts starts a code-mode host's wasm compiling; 18 since cli/help-wrap.ts (help fits the
    // terminal: commander's writeOut is synchronous, so it cannot be imported on demand).
    assert.ok(modules.size <= 18, `the CLI core is ${modules.size} modules: ${[...modules].join(", ")}`);
  });

  test("relay executor: no QuickJS, database, git, archive, config or YAML parser, or MCP SDK; no model, session or memory code", () => {
    const { modules, packages } = subcommand("executor");
    assert.ok(
      modules.has("executor/mcp-stdio.ts"),
      "the executor hosts MCP stdio servers (this test walks the right module)",
    );
    assertNoPackages("relay executor", packages, [
      ...HEAVY.quickjs,
      ...HEAVY.db,
      ...HEAVY.git,
      ...HEAVY.archives,
      ...HEAVY.toml,
      ...HEAVY.mcp,
      ...HEAVY.yaml,
    ]);
    assertNoRooms("relay executor", modules, [
      "model",
      "session",
      "memories",
      "codemode",
      "infty",
      "package",
      "rollout",
    ]);
  });

  test("relay executor and relay code-mode-host, as relay starts them (no flag), load no commander", () => {
    for (const server of ["serve-executor", "serve-code-mode-host"]) {
      const { packages } = closure("main.ts", "cli/entry.ts", `cli/${server}.ts`);
      assert.ok(!packages.has("@commander-js/extra-typings"), `${server} loads commander`);
      assert.ok(packages.has("zod"), `${server} parses its requests (this test walks the right module)`);
    }
  });

  test("a bare relay --version (src/main.ts answers it) loads no package, no node builtin (node:fs alone cost it 250 page faults) and only the version", () => {
    const { modules, packages, builtins } = closure("main.ts", "cli/version-line.ts");
    assert.deepEqual([...packages], []);
    assert.deepEqual([...builtins], []);
    assert.deepEqual([...modules].sort(), [
      "../package.json",
      "cli/version-line.ts",
      "main.ts",
      "sandbox/linux/helper-arg.ts",
      "util/embedded-file.ts",
      "version.ts",
    ]);
  });

  test("the sandbox helper (__sandbox-exec, once per sandboxed command): no package at all, no zod", () => {
    const { modules, packages } = closure("sandbox/linux/helper.ts");
    assert.deepEqual([...packages], []);
    assertNoRooms("the sandbox helper", modules, ["protocol", "model", "session", "codemode", "memories"]);
  });

  test("relay code-mode-host: QuickJS, but no database, git, archives, model or session code", () => {
    const { modules, packages } = subcommand("code-mode-host");
    assert.ok(packages.has("quickjs-emscripten-core"), "the host runs QuickJS (this test walks the right module)");
    assertNoPackages("relay code-mode-host", packages, [
      ...HEAVY.db,
      ...HEAVY.git,
      ...HEAVY.archives,
      ...HEAVY.toml,
      ...HEAVY.mcp,
      ...HEAVY.yaml,
    ]);
    assertNoRooms("relay code-mode-host", modules, ["model", "session", "memories", "executor", "infty", "package"]);
    assert.ok(!modules.has("protocol/child.ts"), "the host starts no child process: node:child_process stays unloaded");
  });

  for (const name of ["run", "infty"]) {
    test(`relay ${name}: no QuickJS (the host is a child process), database, git, archives or MCP SDK until used`, () => {
      const { modules, packages } = subcommand(name);
      assert.ok(modules.has("session/runtime.ts"), "a session is what it runs (this test walks the right module)");
      assert.ok(modules.has("mcp/session-mcp.ts"), "sessions start MCP servers (this test walks the right module)");
      assertNoPackages(`relay ${name}`, packages, [
        ...HEAVY.quickjs,
        ...HEAVY.db,
        ...HEAVY.git,
        ...HEAVY.archives,
        ...HEAVY.mcp,
        ...HEAVY.yaml,
      ]);
      assertNoRooms(`relay ${name}`, modules, ["package"]);
      const engine = [...modules].filter((m) => /^codemode\/(engine|cell|vm)/.test(m));
      assert.deepEqual(engine, [], `relay ${name} loads the QuickJS engine's modules`);
    });
  }

  test("no module that the executor, the code-mode host, relay run or relay infty loads at start-up builds a zod schema as it loads", () => {
    for (const name of ["executor", "code-mode-host", "run", "infty"]) {
      const eager = [...subcommand(name).modules].flatMap(eagerSchemas);
      assert.deepEqual(
        eager,
        [],
        `relay ${name} builds these schemas at start-up: wrap each in lazySchema(() => …) (src/util/lazy-schema.ts)`,
      );
    }
  });

  test("no start-up loads node:crypto or node:readline (milliseconds each in a compiled binary): Web Crypto ids, readline where a question is asked", () => {
    const closures: Array<[string, Set<string>]> = [
      ...["executor", "code-mode-host", "run", "infty"].map((name): [string, Set<string>] => [
        `relay ${name}`,
        subcommand(name).builtins,
      ]),
      ["the sandbox helper", closure("main.ts", "sandbox/linux/helper.ts").builtins],
    ];
    assert.ok(closures[0]![1].has("node:child_process"), "the walk records builtins (this test sees the executor's)");
    for (const [what, builtins] of closures) {
      const slow = [...builtins].filter((b) => b === "node:crypto" || b.startsWith("node:readline"));
      assert.deepEqual(
        slow,
        [],
        `${what} loads ${slow.join(", ")} at start-up: use util/random.ts, or import it where it is used`,
      );
    }
  });

  test("the eager-schema check finds schemas built at load and passes deferred ones", () => {
    const text = [
      "export const A = z.object({ a: z.string() });",
      "export const B = lazySchema(() => z.object({ b: A }));",
      "export const C = BSchema.extend({ c: z.number() });",
      "function later() { return z.number(); }",
      "const v = ASchema.parse({});",
      "export type T = z.infer<typeof A>;",
      'export const D = defineMethod("d", z.string(), lazySchema(() => z.string()), []);',
    ].join("\n");
    assert.deepEqual(eagerSchemaLines(text), [1, 3, 7]);
  });

  test("relay infty serve's server and page load only when serve runs: not for relay infty, relay executor or the CLI core", () => {
    const serve = (modules: Set<string>) => [...modules].filter((m) => m.startsWith("infty/serve/"));
    assert.deepEqual(
      serve(subcommand("infty").modules),
      [],
      "relay infty imports the server on demand (cli/infty/serve.ts)",
    );
    assert.deepEqual(serve(subcommand("executor").modules), []);
    assert.deepEqual(serve(closure("main.ts", "cli/entry.ts").modules), []);
    assert.ok(
      closure("infty/serve/server.ts").modules.has("infty/serve/page-assets.ts"),
      "the server embeds the page (this test walks the right module)",
    );
    assert.ok(!closure("infty/serve/server.ts").packages.has("playwright-core"));
  });

  test("relay memories: its database, but Postgres's driver only for a postgres:// state DB", () => {
    const { packages } = subcommand("memories");
    assert.ok(packages.has("kysely"), "the state DB (this test walks the right module)");
    assertNoPackages("relay memories", packages, ["pg", ...HEAVY.quickjs, ...HEAVY.archives]);
  });

  test("relay package, sessions, skills, doctor, sandbox, mcp: none of QuickJS, database or git; the MCP SDK not even for relay mcp until it starts a server", () => {
    for (const name of ["package", "sessions", "skills", "doctor", "sandbox", "mcp"]) {
      const { packages } = subcommand(name);
      assertNoPackages(`relay ${name}`, packages, [...HEAVY.quickjs, ...HEAVY.db, ...HEAVY.git, ...HEAVY.mcp]);
    }
  });

  test("the walk sees through re-exports and skips type-only imports", () => {
    // protocol/index.ts re-exports; a type-only import of db.ts must not count as loading kysely.
    assert.ok(closure("protocol/index.ts").modules.has("protocol/peer.ts"));
    const read = readFileSync(path.join(SRC, "memories/read.ts"), "utf8");
    assert.ok(!/^import .*from "\.\/store\/db\.ts"/m.test(read), "read.ts loads db.ts on demand only");
    assertNoPackages("memories/read.ts", closure("memories/read.ts").packages, HEAVY.db);
  });

  test("program.ts builds only the subcommand the command line names; the whole tree where help or completion needs it", async () => {
    const names = async (...args: string[]) =>
      (await buildProgram(["relay", "relay", ...args])).commands.map((c) => c.name());
    assert.deepEqual(await names("executor"), ["executor"]);
    assert.deepEqual(await names("skills", "list", "--json"), ["skills"]);
    assert.deepEqual(await names("--verbose", "run", "--json", "hi"), ["run"]);
    assert.deepEqual(await names("--version"), []);
    const all = await names();
    assert.ok(all.length >= 10 && all.includes("executor") && all.includes("memories"), all.join(" "));
    for (const whole of [["--help"], ["help", "run"], ["completion", "bash"], ["frobnicate"]])
      assert.deepEqual(await names(...whole), all, whole.join(" "));
  });
});

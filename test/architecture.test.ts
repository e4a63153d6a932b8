/**
 * The layer order of src/ holds: every import goes to a lower layer (or stays in its folder),
 * no two modules import each other in a cycle (type imports included), and every folder has
 * its place. The order is read from docs/architecture.md, the one place it is written.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { describe, test } from "node:test";
import { REPO_ROOT } from "./support/paths.ts";

// The compiler's own parser finds functions; typescript is a dev dependency, loaded by path.
const ts = createRequire(import.meta.url)("typescript") as typeof import("typescript");

const SRC = path.join(REPO_ROOT, "src");

/** The lines of the fenced block named `name` in docs/architecture.md, the one place the order and the entries are written. */
function docBlock(name: string): string[] {
  const doc = readFileSync(path.join(REPO_ROOT, "docs/architecture.md"), "utf8");
  const block = new RegExp(`\`\`\`${name}\n([\\s\\S]*?)\`\`\``).exec(doc);
  assert.ok(block, `docs/architecture.md has a \`\`\`${name} block`);
  return block[1]!.trim().split("\n");
}

/** The `layers` block: top layer first, folders by spaces. */
function layers(): Map<string, number> {
  const lines = docBlock("layers");
  const rank = new Map<string, number>();
  lines.forEach((line, i) => {
    for (const name of line.trim().split(/\s+/)) rank.set(name, lines.length - i);
  });
  return rank;
}

/** A module's room: its top folder under src/, or its name for a file at the top (main, version). */
function roomOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? rel[0]!.replace(/\.ts$/, "") : rel[0]!;
}

const IMPORT =
  /(?:import|export)\s[^'"]*?from\s+["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*[,)]/g;

function modules(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const rel of readdirSync(SRC, { recursive: true }) as string[]) {
    if (!rel.endsWith(".ts") || rel.endsWith(".d.ts")) continue;
    const file = path.join(SRC, rel);
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(IMPORT)]
      .map((m) => path.resolve(path.dirname(file), (m[1] ?? m[2])!))
      .filter((t) => t.endsWith(".ts"));
    graph.set(file, targets);
  }
  return graph;
}

/** Lines as an editor numbers them: a final newline does not start another. */
function lineCount(text: string): number {
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** Strongly connected groups of more than one module (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(path.relative(REPO_ROOT, w));
    } while (w !== v);
    if (group.length > 1) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** The `entries` block: module (under src/) → why another room reaches into a sub-folder for it. */
function entries(): Map<string, string> {
  return new Map(
    docBlock("entries").map((line) => {
      const [module, ...why] = line.trim().split(/\s+/);
      return [module!, why.join(" ")] as const;
    }),
  );
}

/** The folders (under src/) of `file`, outermost first: src/a/b/c.ts → ["a", "a/b"]. */
function foldersOf(file: string): string[] {
  const parts = path.relative(SRC, file).split(path.sep).slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/**
 * Imports between sibling sub-folders, as edges between them: an import from src/a/b/x.ts to
 * src/a/c/d/y.ts is the edge a/b → a/c (the two folders just below where their paths part).
 */
function siblingEdges(graph: Map<string, string[]>): Map<string, string[]> {
  const edges = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = foldersOf(file);
    for (const target of targets) {
      const to = foldersOf(target);
      let i = 0;
      while (i < from.length && i < to.length && from[i] === to[i]) i++;
      if (i === 0 || i >= from.length || i >= to.length) continue; // other rooms, or a parent and its child
      const set = edges.get(from[i]!) ?? new Set<string>();
      set.add(to[i]!);
      edges.set(from[i]!, set);
    }
  }
  return new Map(
    [...edges].map(([k, v]) => [path.join(REPO_ROOT, "src", k), [...v].map((t) => path.join(REPO_ROOT, "src", t))]),
  );
}

/** A call that turns a string into code: `new Function(...)`, `eval(...)`. */
const RUNTIME_CODE = /\bnew\s+Function\s*\(|(?<![\w$.])eval\s*\(/;

/** A function read at once fits a screen: longer ones are split into named steps. */
const MAX_FUNCTION_LINES = 80;
const MAX_FILE_LINES = 500;

/** Every function, method, arrow and accessor of `text` longer than `max` lines, as `file:line name (N lines)`. */
export function longFunctions(file: string, text: string, max = MAX_FUNCTION_LINES): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: import("typescript").Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(node.end).line - first + 1;
      const parent = node.parent;
      const name =
        node.name?.getText() ??
        (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))
          ? parent.name.getText()
          : "(anonymous)");
      if (lines > max) found.push(`${path.relative(REPO_ROOT, file)}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("architecture", () => {
  const rank = layers();
  const graph = modules();

  test("every room of src/ has its layer in docs/architecture.md", () => {
    const rooms = new Set([...graph.keys()].map(roomOf));
    assert.deepEqual([...rooms].filter((r) => !rank.has(r)).sort(), []);
  });

  test("every import goes down the layers or stays in its room", () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = roomOf(file);
      for (const target of targets) {
        const to = roomOf(target);
        if (to !== from && !(rank.get(to)! < rank.get(from)!))
          upward.push(
            `${path.relative(REPO_ROOT, file)} -> ${path.relative(REPO_ROOT, target)} (${from} may not import ${to})`,
          );
      }
    }
    assert.deepEqual(upward, []);
  });

  test("each room sits exactly one layer above the highest room it imports (the block is the measured order)", () => {
    const uses = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = roomOf(file);
      const set = uses.get(from) ?? new Set<string>();
      uses.set(from, set);
      for (const target of targets) if (roomOf(target) !== from) set.add(roomOf(target));
    }
    const loose = [...uses].flatMap(([room, used]) => {
      const measured = 1 + Math.max(0, ...[...used].map((r) => rank.get(r)!));
      return rank.get(room) === measured ? [] : [`${room}: layer ${rank.get(room)} in the doc, ${measured} measured`];
    });
    assert.deepEqual(loose, []);
  });

  test("no modules import each other in a cycle", () => {
    assert.deepEqual(cycles(graph), []);
  });

  test(`no function in src/ is over ${MAX_FUNCTION_LINES} lines (generated checks aside: one straight run per schema)`, () => {
    const long = [...graph.keys()]
      .filter((file) => !file.endsWith(".generated.ts"))
      .flatMap((file) => longFunctions(file, readFileSync(file, "utf8")));
    assert.deepEqual(long, []);
    const made = `function big() {\n${"  x();\n".repeat(MAX_FUNCTION_LINES)}}\nconst ok = () => 1;\n`;
    assert.deepEqual(
      longFunctions(path.join(SRC, "made.ts"), made),
      [`src/made.ts:1 big (${MAX_FUNCTION_LINES + 2} lines)`],
      "the check finds a long one",
    );
  });

  test(`no file in src/ is over ${MAX_FILE_LINES} lines (generated ones aside)`, () => {
    const long = [...graph.keys()]
      .filter((file) => !file.endsWith(".generated.ts"))
      .map((file) => ({ file: path.relative(REPO_ROOT, file), lines: lineCount(readFileSync(file, "utf8")) }))
      .filter(({ lines }) => lines > MAX_FILE_LINES);
    assert.deepEqual(long, []);
    assert.equal(lineCount("a\nb\n"), 2, "a final newline does not start a line");
  });

  test("nothing in src/ compiles code at run time (new Function, eval): checks are generated ahead", () => {
    const found = [...graph.keys()].flatMap((file) =>
      RUNTIME_CODE.test(readFileSync(file, "utf8")) ? [path.relative(REPO_ROOT, file)] : [],
    );
    assert.deepEqual(found, []);
    assert.ok(RUNTIME_CODE.test("const f = new Function('return 1');") && RUNTIME_CODE.test("eval (src)"));
    assert.ok(
      !RUNTIME_CODE.test("const evaluated = retrieval(x); medieval(y);"),
      "words that end in eval are not calls of it",
    );
  });

  test("the check sees what it must: an upward import and a cycle in a made-up graph are found", () => {
    const fake = new Map([
      [path.join(SRC, "util/a.ts"), [path.join(SRC, "session/b.ts")]],
      [path.join(SRC, "session/b.ts"), [path.join(SRC, "util/a.ts")]],
    ]);
    assert.deepEqual(cycles(fake), [["src/session/b.ts", "src/util/a.ts"]]);
    assert.ok(rank.get("util")! < rank.get("session")!, "util is below session");
    const siblings = new Map([
      [path.join(SRC, "executor/files/index.ts"), [path.join(SRC, "executor/patch/tool.ts")]],
      [
        path.join(SRC, "executor/patch/apply.ts"),
        [path.join(SRC, "executor/files/paths.ts"), path.join(SRC, "executor/tool.ts")],
      ],
      [path.join(SRC, "executor/tool.ts"), [path.join(SRC, "executor/files/paths.ts")]],
    ]);
    assert.deepEqual(cycles(siblingEdges(siblings)), [["src/executor/files", "src/executor/patch"]]);
    assert.ok(graph.size > 100, `read ${graph.size} modules`);
  });

  test("no two sub-folders of a folder import each other, even through others (e.g. executor/files and executor/patch)", () => {
    assert.deepEqual(cycles(siblingEdges(graph)), []);
  });

  test("another room is reached through its face: a module at its top, a sub-folder's index.ts, or a listed entry", () => {
    const listed = entries();
    const used = new Set<string>();
    const deep: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (roomOf(target) === roomOf(file)) continue;
        const rel = path.relative(SRC, target).split(path.sep).join("/");
        if (rel.split("/").length <= 2 || rel.endsWith("/index.ts")) continue;
        if (listed.has(rel)) used.add(rel);
        else deep.push(`${path.relative(SRC, file)} -> ${rel}`);
      }
    }
    assert.deepEqual(
      deep,
      [],
      "import the sub-folder's index.ts, or list the module in docs/architecture.md's entries block with why",
    );
    assert.deepEqual(
      [...listed.keys()].filter((m) => !used.has(m)),
      [],
      "entries no other room imports: remove them from the block",
    );
    assert.deepEqual(
      [...listed].filter(([, why]) => why === "").map(([m]) => m),
      [],
      "every entry says why",
    );
  });

  test("the server processes' rooms (executor, codemode) are imported only by their serve entries in cli/", () => {
    const servers = new Set(["executor", "codemode"]);
    const found = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((t) => servers.has(roomOf(t)) && roomOf(t) !== roomOf(file))
        .map((t) => `${path.relative(SRC, file)} -> ${path.relative(SRC, t)}`),
    );
    const outsideServe = found.filter((edge) => !/^cli\/serve-[a-z-]+\.ts -> /.test(edge));
    assert.deepEqual(outsideServe, [], "talk to a server through contracts/ and protocol/, not its internals");
    assert.ok(found.length >= 2, `the serve entries import their servers: ${found.join(", ")}`);
  });
});

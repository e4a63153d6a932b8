/**
 * The text of one generated checks module: a header naming its source and the generator, the
 * imports it needs from util/fast-parse.ts, then one function per schema the owning module
 * exports in CHECKED_SCHEMAS, named as there. A registered schema met inside another is a call
 * of its own function rather than written out again. Biome formats the text as
 * `npm run format` would, so the committed file passes `npm run lint`.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import type { z } from "zod";
import { type KeyTree, keyTreeOf } from "../../src/config/unknown-keys.ts";
import { emitNode } from "./emit-nodes.ts";
import { Emitter, type SharedCheck } from "./emitter.ts";
import { defOf, keySource, PREDICATES } from "./zod-read.ts";

/** A module that owns schemas parsed on the hot path, by its path from the repository root. */
export interface Owner {
  file: string;
  schemas: Record<string, z.ZodType>;
  /** Schemas whose key trees (src/config/unknown-keys.ts) the module exports too, by name. */
  keyTrees?: Record<string, z.ZodType>;
}

/** A key tree as source. */
function keyTreeSource(tree: KeyTree | null): string {
  if (tree === null) return "null";
  const key = (k: string) => {
    // In an object literal, `__proto__: …` sets the prototype instead of making a key.
    if (k === "__proto__") throw new Error("a schema key named __proto__ cannot be written into a key tree");
    return keySource(k);
  };
  return `{ ${Object.entries(tree)
    .map(([k, sub]) => `${key(k)}: ${keyTreeSource(sub)}`)
    .join(", ")} }`;
}

/** The owner's key trees, each an exported constant. */
function keyTreesText(owner: Owner): string {
  return Object.entries(owner.keyTrees ?? {})
    .map(
      ([name, schema]) =>
        `/** The keys of ${name.replace(/Keys$/, "")} in ${owner.file}, through its objects (src/config/unknown-keys.ts). */\n` +
        `export const ${name} = ${keyTreeSource(keyTreeOf(schema))};`,
    )
    .join("\n\n");
}

/** Where an owner's checks go: `<dir>/<name>-checks.generated.ts`, next to it. */
export const checksModulePath = (file: string) => file.replace(/\.ts$/, "-checks.generated.ts");

const IMPORTS = ["codePoints", "FAIL", "type Obj", "refinementHolds", "type Schema", "viaZod", "zodPart"];
const TAKEN = new Set([...IMPORTS.map((i) => i.replace("type ", "")), ...PREDICATES]);

interface Written extends SharedCheck {
  text: string;
  labels: boolean;
}

/** The checks of one owner, each written once, on first need. */
class ChecksFile {
  /** The first name of each registered schema, by its definition (a lazy stand-in and its schema share one). */
  private readonly names = new Map<object, string>();
  private readonly written = new Map<string, Written>();
  private readonly writing = new Set<string>();

  constructor(readonly owner: Owner) {
    for (const [name, schema] of Object.entries(owner.schemas)) {
      if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) || TAKEN.has(name))
        throw new Error(`${owner.file}: CHECKED_SCHEMAS.${name} cannot name a function`);
      if (!this.names.has(defOf(schema))) this.names.set(defOf(schema), name);
    }
  }

  /** The function named after the first registration of `def`'s schema, unless it is being written (recursion). */
  shared(def: object): SharedCheck | undefined {
    const name = this.names.get(def);
    return name === undefined || this.writing.has(name) ? undefined : this.check(name);
  }

  check(name: string): Written {
    const done = this.written.get(name);
    if (done !== undefined) return done;
    this.writing.add(name);
    try {
      const e = new Emitter(name, (def) => this.shared(def));
      const out = emitNode(e, this.owner.schemas[name]!, "value", []);
      const params = e.readsSchema ? "value: unknown, schema: Schema" : "value: unknown";
      const text = [
        ...e.constants,
        ...(e.constants.length > 0 ? [""] : []),
        `/** CHECKED_SCHEMAS.${name} of ${this.owner.file}. */`,
        `export function ${name}(${params}): unknown {`,
        ...e.lines,
        `return ${out};`,
        "}",
      ].join("\n");
      const w = { name, text, readsSchema: e.readsSchema, asksZod: e.asksZod, labels: e.labels };
      this.written.set(name, w);
      return w;
    } finally {
      this.writing.delete(name);
    }
  }

  /** Every function, in the order of CHECKED_SCHEMAS; a schema registered twice is one function under two names. */
  parts(): { body: string; labels: boolean } {
    const parts: string[] = [];
    let labels = false;
    for (const [name, schema] of Object.entries(this.owner.schemas)) {
      const first = this.names.get(defOf(schema))!;
      if (first !== name) {
        parts.push(`/** The same schema as ${first}. */\nexport const ${name} = ${first};`);
        continue;
      }
      const w = this.check(name);
      labels ||= w.labels;
      parts.push(w.text);
    }
    return { body: parts.join("\n\n"), labels };
  }
}

/** Whether the generated check of `schema` decides every value without asking zod. */
export function checkedWithoutZod(schema: z.ZodType): boolean {
  return !new ChecksFile({ file: "", schemas: { check: schema } }).check("check").asksZod;
}

/** Whether the generated check of `schema` decides every value without reading the schema (which builds a lazy one). */
export function checkedWithoutSchema(schema: z.ZodType): boolean {
  return !new ChecksFile({ file: "", schemas: { check: schema } }).check("check").readsSchema;
}

/** The unformatted text of `owner`'s checks module, its imports read from `root`. */
export function checksModuleText(owner: Owner, root: string): string {
  const { body, labels } = new ChecksFile(owner).parts();
  // The helpers the body names, string literals aside.
  const code = body.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const uses = (name: string) => new RegExp(`\\b${name}\\b`).test(code);
  const used = IMPORTS.filter((h) => uses(h.replace("type ", "")));
  const usedPredicates = PREDICATES.filter(uses);
  const importPath = (module: string) => {
    const from = path.relative(path.dirname(path.join(root, owner.file)), path.join(root, module));
    return from.startsWith(".") ? from : `./${from}`;
  };
  const header = [
    `// Generated by scripts/build-validators.ts from the zod schemas of ${owner.file} (npm run build:validators); do not edit.`,
    ...(labels
      ? ["// biome-ignore-all lint/suspicious/noConfusingLabels: a union tries each option in a block a refusal leaves"]
      : []),
    "/**",
    ` * The checks of CHECKED_SCHEMAS in ${owner.file}, one function per schema, named as`,
    " * there: each returns the parsed value, or FAIL exactly where zod reports an issue.",
    " */",
    used.length > 0 ? `import { ${used.join(", ")} } from "${importPath("src/util/fast-parse.ts")}";` : "",
    usedPredicates.length > 0
      ? `import { ${usedPredicates.join(", ")} } from "${importPath("src/util/predicates.ts")}";`
      : "",
  ];
  const trees = keyTreesText(owner);
  return `${header.join("\n")}\n\n${body}\n${trees === "" ? "" : `\n${trees}\n`}`;
}

/** `text` as Biome formats it (and orders its imports), for the file at `file`. */
export function formatted(text: string, file: string, root: string): string {
  const biome = path.join(root, "node_modules/.bin/biome");
  const r = spawnSync(biome, ["check", "--write", "--linter-enabled=false", `--stdin-file-path=${file}`], {
    cwd: root,
    input: text,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`biome could not format ${file}: ${r.error?.message ?? r.stderr}`);
  return r.stdout;
}

/** The text `owner`'s committed checks module must hold. */
export function checksModuleSource(owner: Owner, root: string): string {
  return formatted(checksModuleText(owner, root), checksModulePath(owner.file), root);
}

/**
 * `text` without what formatting changes: whitespace outside string literals, and the commas
 * Biome adds before a closing bracket. A committed module is current when this equals the same
 * of the generator's unformatted text (that it is formatted is `npm run lint`'s to check); so the
 * comparison needs no formatter, under every runtime the tests run on.
 */
export function withoutFormatting(text: string): string {
  return text
    .split(/("(?:[^"\\\n]|\\.)*")/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/\s+/g, "").replace(/,([)\]}])/g, "$1")))
    .join("");
}

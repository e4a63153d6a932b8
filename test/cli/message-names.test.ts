/**
 * Messages name real flags and keys only: every `relay <command> … --flag` written anywhere in
 * the source (errors, hints, help) must be an option of that command, and every
 * `(config: key)` / `(config: [section] key)` a key of config.toml's schema.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { buildProgram } from "../../src/cli/program.ts";
import { RelayConfigSchema } from "../../src/config/config.ts";
import { MemorySettingsSchema } from "../../src/config/memories.ts";
import { REPO_ROOT } from "../support/paths.ts";

interface CommandLike {
  name(): string;
  aliases(): string[];
  commands: readonly CommandLike[];
  options: ReadonlyArray<{ long?: string; short?: string }>;
}

/** "infty run" → its flags, for every command at every level. */
function commandFlags(root: CommandLike): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const walk = (c: CommandLike, prefix: string) => {
    for (const sub of c.commands) {
      for (const name of [sub.name(), ...sub.aliases()]) {
        const key = `${prefix} ${name}`.trim();
        out.set(key, new Set(sub.options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)))));
        walk(sub, key);
      }
    }
  };
  walk(root, "");
  return out;
}

/** Every key path of a zod object schema (defaults, optionals and lazy wrappers looked through). */
function keyPaths(schema: unknown, prefix = "", out = new Set<string>()): Set<string> {
  let s = schema as { shape?: Record<string, unknown>; _def?: { innerType?: unknown; schema?: unknown } } | undefined;
  while (s && !s.shape && (s._def?.innerType || s._def?.schema)) s = (s._def.innerType ?? s._def.schema) as typeof s;
  for (const [k, v] of Object.entries(s?.shape ?? {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    out.add(key);
    keyPaths(v, key, out);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const f = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(f) : f.endsWith(".ts") ? [f] : [];
  });
}

const ALWAYS = new Set(["--help", "-h", "--version", "-V"]);

/** The flags a text gives relay commands that those commands do not have. */
export function unknownFlags(text: string, flags: Map<string, Set<string>>): string[] {
  const bad: string[] = [];
  for (const m of text.matchAll(/relay((?: [a-z][a-z0-9-]*)+)((?:(?!relay )[^\n"`;)])*)/g)) {
    const words = m[1]!.trim().split(" ");
    let used = words.length;
    while (used > 0 && !flags.has(words.slice(0, used).join(" "))) used--;
    if (used === 0) continue;
    const command = words.slice(0, used).join(" ");
    if (m[2]!.startsWith(":")) continue; // "relay memories: …" begins a message, not a command line
    // The command line ends at ` -- ` (the wrapped program's words follow), an uppercase
    // placeholder for one, a pipe or `&&`, or a gap of two spaces (a table's next column).
    const rest = `${words.slice(used).join(" ")}${m[2]}`.split(/ -- | [A-Z]{2,}\b| {2,}|\||&&/)[0]!;
    for (const f of rest.matchAll(/(?<![\w-])(--?[a-zA-Z][a-z0-9-]*)/g)) {
      if (!ALWAYS.has(f[1]!) && !flags.get(command)!.has(f[1]!)) bad.push(`relay ${command} ${f[1]}`);
    }
  }
  return bad;
}

/** The `(config: key)` names of a text that config.toml does not have. */
export function unknownKeys(text: string, keys: Set<string>): string[] {
  const bad: string[] = [];
  for (const m of text.matchAll(/\(config: (?:\[([a-z_.]+)\] )?([a-z_][A-Za-z_]*(?:\.[A-Za-z_]+)*)/g)) {
    const key = m[1] ? `${m[1]}.${m[2]}` : m[2]!;
    if (!keys.has(key)) bad.push(key);
  }
  return bad;
}

describe("messages name real flags and config keys", async () => {
  const flags = commandFlags((await buildProgram()) as unknown as CommandLike);
  const keys = keyPaths(RelayConfigSchema);
  for (const k of keyPaths(MemorySettingsSchema)) keys.add(`memories.${k}`);

  test("the scanners catch a wrong flag and a wrong key", () => {
    assert.deepEqual(
      unknownFlags("set it with relay run --api-key-envx NAME, or relay infty run --max-turn 3", flags),
      ["relay run --api-key-envx", "relay infty run --max-turn"],
    );
    assert.deepEqual(unknownFlags("relay sandbox -- sh -c 'x'; relay run -m gpt --resume last", flags), []);
    assert.deepEqual(
      unknownKeys(
        "(config: apiKeyEnv) (config: api_key_env) (config: [memories] min_rollout_idle_hours) (config: [memories] nope)",
        keys,
      ),
      ["apiKeyEnv", "memories.nope"],
    );
  });

  test("every relay command line and config key written in the source exists", () => {
    const bad: string[] = [];
    for (const file of sourceFiles(path.join(REPO_ROOT, "src"))) {
      const text = readFileSync(file, "utf8");
      for (const b of [...unknownFlags(text, flags), ...unknownKeys(text, keys)])
        bad.push(`${path.relative(REPO_ROOT, file)}: ${b}`);
    }
    assert.deepEqual(bad, []);
  });

  test("so does every relay command line in the README and docs/", () => {
    const docs = [
      "README.md",
      ...readdirSync(path.join(REPO_ROOT, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f) => path.join("docs", f)),
    ];
    const bad = docs.flatMap((doc) =>
      unknownFlags(readFileSync(path.join(REPO_ROOT, doc), "utf8"), flags).map((b) => `${doc}: ${b}`),
    );
    assert.deepEqual(bad, []);
  });
});

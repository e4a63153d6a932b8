/**
 * The maintained bash grammar (tree-sitter-bash, run by web-tree-sitter's wasm runtime), which
 * approval parses commands with. Loaded on first use only: a session under `-a untrusted` starts
 * loading it at once (about 0.1 s, once per process) and every check awaits it. A compiled relay
 * carries both wasm files (package/compile.ts embeds them); elsewhere they come from node_modules.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Parser } from "web-tree-sitter";
import { BASH_GRAMMAR_WASM_ASSET, embeddedFile, TREE_SITTER_WASM_ASSET } from "./embedded-file.ts";

export type { Node as SyntaxNode, Parser as BashParser } from "web-tree-sitter";

let loading: Promise<Parser> | undefined;
let loaded: Parser | undefined;

/** The parser, loading it on the first call; a failed load is tried again on the next call. */
export function loadBashGrammar(): Promise<Parser> {
  loading ??= load().then(
    (parser) => (loaded = parser),
    (e: unknown) => {
      loading = undefined;
      throw new Error(
        `cannot load the bash grammar approval parses commands with: ${e instanceof Error ? e.message : String(e)}`,
      );
    },
  );
  return loading;
}

/** The parser if it has been loaded, for synchronous checks after an await of loadBashGrammar(). */
export function loadedBashGrammar(): Parser | undefined {
  return loaded;
}

async function load(): Promise<Parser> {
  const { Parser, Language } = await import("web-tree-sitter");
  await Parser.init({ wasmBinary: await wasmBytes(TREE_SITTER_WASM_ASSET, "web-tree-sitter/tree-sitter.wasm") });
  const bash = await Language.load(await wasmBytes(BASH_GRAMMAR_WASM_ASSET, "tree-sitter-bash/tree-sitter-bash.wasm"));
  const parser = new Parser();
  parser.setLanguage(bash);
  return parser;
}

/** An embedded wasm's bytes, or the installed package's file by its module specifier. */
async function wasmBytes(asset: string, specifier: string): Promise<Uint8Array> {
  const file = embeddedFile(asset);
  if (file) return new Uint8Array(await file.arrayBuffer());
  return readFileSync(createRequire(import.meta.url).resolve(specifier));
}

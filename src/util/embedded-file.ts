/**
 * Files a compiled binary carries (`bun build --compile main.js a.gz b.wasm`): bun names each
 * `<stem>-<hash>.<ext>` and lists it in `Bun.embeddedFiles`. None anywhere else (source, Node,
 * Deno).
 */

/** QuickJS's wasm (package/compile.ts embeds it; codemode/engine.ts instantiates it). */
export const QUICKJS_WASM_ASSET = "quickjs.wasm";
/** tree-sitter's runtime and its bash grammar (util/bash-grammar.ts loads them for approval). */
export const TREE_SITTER_WASM_ASSET = "tree-sitter.wasm";
export const BASH_GRAMMAR_WASM_ASSET = "tree-sitter-bash.wasm";

/** A wasm file a build embeds: its asset name and where npm installs it. */
export interface WasmAsset {
  asset: string;
  package: string;
  /** The file in the package, as a path, or as the export that names it (`./wasm`). */
  file: { path: string } | { export: string };
}

/** Every wasm a compiled relay carries, so that it also recompiles itself with them. */
export const WASM_ASSETS: readonly WasmAsset[] = [
  { asset: QUICKJS_WASM_ASSET, package: "@jitl/quickjs-wasmfile-release-sync", file: { export: "./wasm" } },
  { asset: TREE_SITTER_WASM_ASSET, package: "web-tree-sitter", file: { path: "tree-sitter.wasm" } },
  { asset: BASH_GRAMMAR_WASM_ASSET, package: "tree-sitter-bash", file: { path: "tree-sitter-bash.wasm" } },
];

export interface EmbeddedFile {
  name: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

function baseName(name: string): string {
  return name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1);
}

/** Whether an embedded file's `name` is `asset` (`stem.ext`) as bun names it: `stem-<hash>.ext`, or as it was. */
export function isEmbeddedAsset(name: string, asset: string): boolean {
  // Bun lists bare names (`quickjs-a1b2.wasm`); a path of either kind is taken by its last part.
  const base = baseName(name);
  if (base === asset) return true;
  const dot = asset.lastIndexOf(".");
  const stem = asset.slice(0, dot);
  const ext = asset.slice(dot);
  return (
    base.startsWith(`${stem}-`) &&
    base.endsWith(ext) &&
    /^[0-9a-z]+$/.test(base.slice(stem.length + 1, base.length - ext.length))
  );
}

/** The embedded file that was `asset` at build time, if this binary carries one. */
export function embeddedFile(asset: string): EmbeddedFile | undefined {
  const bun = (globalThis as unknown as { Bun?: { embeddedFiles?: readonly EmbeddedFile[] } }).Bun;
  return pickEmbedded(bun?.embeddedFiles ?? [], asset);
}

/**
 * The file among `files` that was `asset`. `tree-sitter-bash.wasm` also reads as a hashed
 * `tree-sitter.wasm`, so an exact name wins and another asset's exact name is never taken.
 */
export function pickEmbedded<F extends { name: string }>(files: readonly F[], asset: string): F | undefined {
  const others = WASM_ASSETS.map((a) => a.asset).filter((a) => a !== asset);
  return (
    files.find((f) => baseName(f.name) === asset) ??
    files.find((f) => isEmbeddedAsset(f.name, asset) && !others.includes(baseName(f.name)))
  );
}

const compiled = new Map<string, Promise<WebAssembly.Module> | null>();

/**
 * The embedded wasm `asset`, compiled once per process (null where the binary carries none).
 * JavaScriptCore compiles on background threads (QuickJS's 500 KB: 12–16 ms), so a caller that
 * will need it starts it early and awaits it later.
 */
export function compileEmbeddedWasm(asset: string): Promise<WebAssembly.Module> | null {
  const known = compiled.get(asset);
  if (known !== undefined) return known;
  const file = embeddedFile(asset);
  const compiling = file ? file.arrayBuffer().then((bytes) => WebAssembly.compile(bytes)) : null;
  // Started before anyone awaits it: a failure is reported where it is awaited, not as an
  // unhandled rejection on the way.
  compiling?.catch(() => {});
  compiled.set(asset, compiling);
  return compiling;
}

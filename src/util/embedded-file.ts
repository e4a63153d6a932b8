/**
 * Files a compiled binary carries (`bun build --compile main.js a.gz b.wasm`): bun names each
 * `<stem>-<hash>.<ext>` and lists it in `Bun.embeddedFiles`. None anywhere else (source, Node,
 * Deno).
 */

/** QuickJS's wasm (package/compile.ts embeds it; codemode/engine.ts instantiates it). */
export const QUICKJS_WASM_ASSET = "quickjs.wasm";

export interface EmbeddedFile {
  name: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Whether an embedded file's `name` is `asset` (`stem.ext`) as bun names it: `stem-<hash>.ext`, or as it was. */
export function isEmbeddedAsset(name: string, asset: string): boolean {
  // Bun lists bare names (`quickjs-a1b2.wasm`); a path of either kind is taken by its last part.
  const base = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1);
  if (base === asset) return true;
  const dot = asset.lastIndexOf(".");
  const stem = asset.slice(0, dot);
  const ext = asset.slice(dot);
  return base.startsWith(`${stem}-`) && base.endsWith(ext) && /^[0-9a-z]+$/.test(base.slice(stem.length + 1, base.length - ext.length));
}

/** The embedded file that was `asset` at build time, if this binary carries one. */
export function embeddedFile(asset: string): EmbeddedFile | undefined {
  const bun = (globalThis as unknown as { Bun?: { embeddedFiles?: readonly EmbeddedFile[] } }).Bun;
  return bun?.embeddedFiles?.find((f) => isEmbeddedAsset(f.name, asset));
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

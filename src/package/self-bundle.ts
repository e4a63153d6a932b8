/**
 * What a compiled relay needs to recompile itself for another target, with no source tree and
 * no bun installed: its own bundle (embedded at build time by compile.ts) and a bun, which is
 * the binary itself run with BUN_BE_BUN=1.
 */
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import { embeddedFile, WASM_ASSETS } from "../util/embedded-file.ts";
import { err, type Result } from "../util/result.ts";
import { BUNDLE_ASSET, type BunCommand, type Bundle, BundleFileSchema, unpackBundle } from "./compile.ts";

/** The running binary's bundle, unpacked into a new directory under `workDir`. */
export async function selfBundle(workDir: string): Promise<Result<Bundle>> {
  const file = embeddedFile(BUNDLE_ASSET);
  if (!file)
    return err(
      "no_self_bundle",
      `this relay binary (${process.execPath}) carries no ${BUNDLE_ASSET}, so it cannot recompile itself; rebuild it with npm run build, or pass a prebuilt binary with --entrypoint-bin`,
    );
  const corrupt = (why: string) =>
    err(
      "no_self_bundle",
      `this relay binary's embedded ${BUNDLE_ASSET} is corrupt (${why}); download the binary again`,
    );
  const gzip = new Uint8Array(await file.arrayBuffer());
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(gunzipSync(gzip)));
  } catch (e) {
    return corrupt((e as Error).message);
  }
  const bundle = BundleFileSchema.safeParse(json);
  if (!bundle.success) return corrupt(z.prettifyError(bundle.error));
  const wasm = new Map<string, Uint8Array>();
  for (const { asset } of WASM_ASSETS) {
    const file = embeddedFile(asset);
    if (!file)
      return err(
        "no_self_bundle",
        `this relay binary (${process.execPath}) carries its ${BUNDLE_ASSET} but no ${asset}, so it cannot recompile itself; download a current binary, or pass a prebuilt one with --entrypoint-bin`,
      );
    wasm.set(asset, new Uint8Array(await file.arrayBuffer()));
  }
  return unpackBundle(workDir, bundle.data, gzip, wasm);
}

/** The running compiled binary as bun. */
export function selfAsBun(env: Record<string, string | undefined> = process.env): BunCommand {
  return { path: process.execPath, env: { ...env, BUN_BE_BUN: "1" } };
}

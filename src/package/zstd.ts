/**
 * zstd for archives: node:zlib's native zstd where the runtime has it (Bun, Deno, Node >= 22.15),
 * else @bokuweb/zstd-wasm (Node 20). Compression takes the whole tar at once on both (see
 * zstdCompressStream); decompression streams on the native backend.
 */
import { Transform, type TransformCallback } from "node:stream";
import * as zlib from "node:zlib";

/**
 * Level 6: a 115 MB binary becomes ~50 MB in ~2.7 s (native) / ~5.5 s (wasm); level 9 saves 4% more
 * for twice the time, 19 takes a minute. Output is byte-stable per backend (the two bundle
 * different zstd versions, so native and wasm archives differ in bytes, not in content).
 */
export const ZSTD_LEVEL = 6;

interface NativeZstd {
  zstdCompress(
    input: Buffer,
    options: { params: Record<number, number> },
    cb: (e: Error | null, out: Buffer) => void,
  ): void;
  createZstdDecompress(): Transform;
  constants: { ZSTD_c_compressionLevel: number };
}

function native(): NativeZstd | undefined {
  const z = zlib as unknown as Partial<NativeZstd> & { constants: Record<string, number> };
  if (
    typeof z.zstdCompress === "function" &&
    typeof z.createZstdDecompress === "function" &&
    z.constants.ZSTD_c_compressionLevel !== undefined
  ) {
    return z as NativeZstd;
  }
  return undefined;
}

export type ZstdBackend = "native" | "wasm";

export function zstdBackend(): ZstdBackend {
  return native() ? "native" : "wasm";
}

type Wasm = typeof import("@bokuweb/zstd-wasm");
let wasmReady: Promise<Wasm> | undefined;
function wasm(): Promise<Wasm> {
  wasmReady ??= import("@bokuweb/zstd-wasm").then(async (m) => {
    await m.init();
    return m;
  });
  return wasmReady;
}

/** A Transform that buffers everything and runs `fn` over it at the end (the wasm path). */
class WholeBuffer extends Transform {
  private chunks: Buffer[] = [];
  constructor(private readonly fn: (b: Buffer) => Promise<Uint8Array>) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.chunks.push(chunk);
    cb();
  }
  override _flush(cb: TransformCallback): void {
    this.fn(Buffer.concat(this.chunks)).then(
      (out) => {
        this.chunks = [];
        cb(null, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
      },
      (e: unknown) => cb(e instanceof Error ? e : new Error(String(e))),
    );
  }
}

/**
 * Compresses the whole input at once, on both backends: native streaming zstd emits different
 * bytes depending on how its input arrives in time (writes that queue up while it works are
 * compressed differently from writes it waits for), which broke byte-identical rebuilds under
 * load. `backend` is for tests (the wasm path runs by itself only where node:zlib lacks zstd).
 */
export function zstdCompressStream(level = ZSTD_LEVEL, backend: ZstdBackend = zstdBackend()): Transform {
  const n = backend === "native" ? native() : undefined;
  if (n) {
    const params = { [n.constants.ZSTD_c_compressionLevel]: level };
    return new WholeBuffer(
      (b) =>
        new Promise<Uint8Array>((resolve, reject) =>
          n.zstdCompress(b, { params }, (e, out) => (e ? reject(e) : resolve(out))),
        ),
    );
  }
  return new WholeBuffer(async (b) => (await wasm()).compress(b, level));
}

export function zstdDecompressStream(backend: ZstdBackend = zstdBackend()): Transform {
  const n = backend === "native" ? native() : undefined;
  if (n) return n.createZstdDecompress();
  return new WholeBuffer(async (b) => wasmDecompress(await wasm(), b));
}

/**
 * Streamed frames (native zstd, `zstd` in a pipe) do not record their size, and the wasm build
 * only decompresses into a buffer it is told to allocate: guess, and double while it is too small.
 */
function wasmDecompress(m: Wasm, b: Buffer): Uint8Array {
  let guess = Math.max(1 << 20, b.length * 4);
  for (;;) {
    try {
      return m.decompress(b, { defaultHeapSize: guess });
    } catch (e) {
      // ZSTD_error_dstSize_tooSmall is 70; the wasm reports it as "... code -70".
      if (!/-70\b/.test((e as Error).message) || guess >= 2 ** 31) throw e;
      guess *= 2;
    }
  }
}

/**
 * The parts of a byte stream a peer uses: Node's Readable and Writable have them (child
 * processes' pipes, stdio under Node and Deno), and so do Bun's own stdio wrappers (bun-stdio.ts).
 */
export interface ByteSource {
  on(event: "data", handler: (chunk: Uint8Array) => void): unknown;
  on(event: "end", handler: () => void): unknown;
  on(event: "error", handler: (e: Error) => void): unknown;
}

export interface ByteSink {
  /** Queues the bytes in order; may throw when the stream is already broken. */
  write(bytes: Uint8Array): unknown;
  end(): unknown;
  on(event: "error", handler: (e: Error) => void): unknown;
}

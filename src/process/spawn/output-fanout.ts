/**
 * A child's output on its way to listeners. Chunks that arrive before the first listener are
 * kept (copied: a runtime may reuse the chunk's memory) and given to it when it comes.
 */
export interface OutputFanout {
  emit(chunk: Uint8Array): void;
  onData(cb: (chunk: Uint8Array) => void): void;
}

export function outputFanout(): OutputFanout {
  const listeners: Array<(c: Uint8Array) => void> = [];
  const early: Uint8Array[] = [];
  return {
    emit(chunk) {
      if (listeners.length) listeners.forEach((l) => l(chunk));
      else early.push(new Uint8Array(chunk));
    },
    onData(cb) {
      listeners.push(cb);
      early.splice(0).forEach(cb);
    },
  };
}

/** Feeds a child's output stream to `emit` until it ends; a read error ends it as end of file would. */
export async function pumpInto(stream: AsyncIterable<Uint8Array>, emit: (chunk: Uint8Array) => void): Promise<void> {
  try {
    for await (const chunk of stream) emit(chunk);
  } catch {
    // the pipe broke: no more output
  }
}

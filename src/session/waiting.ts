/**
 * "Waiting is visible": while a model request has produced nothing for a while, the session
 * emits `waiting` heartbeats (first after `afterMs`, then every `everyMs`), so a silent server
 * is never mistaken for a hung relay. The clock stops while the consumer handles an event (that
 * time is not the model's) and starts again from zero after it.
 */

import type { EmitEvent } from "../contracts/events.ts";
import type { ModelClient, ModelEvent, ModelRequest } from "../model/client.ts";

export interface HeartbeatSettings {
  /** Silence before the first heartbeat. */
  afterMs: number;
  /** Between heartbeats while the silence lasts. */
  everyMs: number;
}

export const DEFAULT_HEARTBEAT: Readonly<HeartbeatSettings> = Object.freeze({ afterMs: 3_000, everyMs: 5_000 });

/** Emits `waiting` events from `start()` until `stop()`. */
export class WaitingClock {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private since = 0;

  constructor(
    private readonly emit: EmitEvent,
    private readonly settings: HeartbeatSettings = DEFAULT_HEARTBEAT,
  ) {}

  start(): void {
    this.stop();
    this.since = Date.now();
    this.schedule(this.settings.afterMs);
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(
      () => {
        this.emit({ type: "waiting", seconds: Math.floor((Date.now() - this.since) / 1000) });
        this.schedule(this.settings.everyMs);
      },
      Math.max(0, ms),
    );
  }
}

/** `model` whose streams emit `waiting` heartbeats while they are silent. */
export function withHeartbeat(
  model: ModelClient,
  emit: EmitEvent,
  settings: HeartbeatSettings = DEFAULT_HEARTBEAT,
): ModelClient {
  return {
    provider: model.provider,
    async *stream(request: ModelRequest, signal?: AbortSignal): AsyncGenerator<ModelEvent> {
      const clock = new WaitingClock(emit, settings);
      try {
        clock.start();
        for await (const e of model.stream(request, signal)) {
          clock.stop();
          yield e;
          clock.start();
        }
      } finally {
        clock.stop();
      }
    },
  };
}

/**
 * A cell's nested tool calls and notifications in flight: how many, how many input characters
 * they hold (they live outside the QuickJS memory limit, so both are capped), and cancelling them.
 */

/** Characters of tool-call inputs and notifications in flight at once: more ends the cell. */
export const MAX_IN_FLIGHT_CHARS = 4 << 20;
export const MAX_CALLS_IN_FLIGHT = 1_000;

export class InFlight {
  /** Nested tool calls in flight: cancelled whenever the cell ends. */
  private readonly calls = new Set<AbortController>();
  /** Notifications in flight: cancelled by termination, drained by natural completion. */
  private readonly notes = new Set<AbortController>();
  private chars = 0;

  /** `hitLimit` ends the cell and returns the limit in effect. */
  constructor(private readonly hitLimit: (why: string) => string) {}

  /** Input characters that may still go in flight. */
  get room(): number {
    return MAX_IN_FLIGHT_CHARS - this.chars;
  }

  get notesPending(): number {
    return this.notes.size;
  }

  /** Whether nothing is in flight. */
  get idle(): boolean {
    return this.calls.size === 0 && this.notes.size === 0;
  }

  /** Takes `chars` input characters in flight, or returns the limit a new call or notification breaks. */
  admit(chars: number, cut: boolean): string | undefined {
    if (this.calls.size + this.notes.size >= MAX_CALLS_IN_FLIGHT)
      return `too many tool calls and notifications in flight (at most ${MAX_CALLS_IN_FLIGHT})`;
    if (cut || this.chars + chars > MAX_IN_FLIGHT_CHARS) {
      return this.hitLimit(
        `has more than ${MAX_IN_FLIGHT_CHARS} characters of tool-call inputs and notifications in flight`,
      );
    }
    this.chars += chars;
    return undefined;
  }

  startCall(): AbortController {
    const c = new AbortController();
    this.calls.add(c);
    return c;
  }

  startNote(): AbortController {
    const c = new AbortController();
    this.notes.add(c);
    return c;
  }

  /** A call or notification settled: its controller and the `chars` it admitted leave. */
  end(c: AbortController, chars: number): void {
    this.calls.delete(c);
    this.notes.delete(c);
    this.chars -= chars;
  }

  cancelCalls(): void {
    for (const c of this.calls) c.abort();
    this.calls.clear();
  }

  /** Aborts the notifications in flight; each leaves when its delivery settles. */
  cancelNotes(): void {
    for (const c of this.notes) c.abort();
  }
}

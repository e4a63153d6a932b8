/**
 * One cell: a prepared QuickJS VM (src/codemode/vm.ts) running one script with the session's
 * memory limit and CPU budget, plus the yield/observe state machine. Everything the script can
 * make the host hold (output, timers, calls in flight, stored values) is capped, because it
 * lives outside the QuickJS memory limit.
 */
import { describeThrown } from "./thrown.ts";
import { CellOutput } from "./cell-output.ts";
import type { QuickJSDeferredPromise, QuickJSHandle } from "quickjs-emscripten-core";
import { err, ok, type Result } from "../util/result.ts";
import { EXIT_SENTINEL } from "./prelude.ts";
import { CodeModeErrorCode, type ExecuteRequest, type NestedToolCall, type RuntimeResponse } from "./protocol.ts";
import { CellWrites, type StoredValues } from "./stored.ts";
import type { PreparedVm, VmOwner } from "./vm.ts";
import type { HeapAccount, HeapGuard } from "./heap-guard.ts";

/** What a session needs from its owner: nested tool calls and notifications. */
export interface EngineDelegate {
  invokeTool(call: Omit<NestedToolCall, "session_id">, signal: AbortSignal): Promise<Result<unknown>>;
  notify(n: { call_id: string; cell_id: string; text: string }, signal: AbortSignal): Promise<void>;
  cellClosed?(cellId: string): void;
  /**
   * Called every BUSY_POLL_MS while a cell has been inside the VM for longer than that: the
   * terminate request cannot be read while a CPU-bound script holds the thread, so the host
   * checks for an out-of-band one here. True stops the cell as terminated.
   */
  whileBusy?(cellId: string): boolean;
  /**
   * Called on every interrupt check once a VM entry has lasted LONG_ENTRY_MS: the host writes the
   * frames it held back to send together (ExecutionStarted, notifications, delegate requests),
   * so a busy script cannot delay them.
   */
  longEntry?(): void;
}

export interface Limits {
  memoryLimitBytes: number;
  cpuLimitMs: number;
}

/** What a cell needs from the engine. */
export interface CellHost {
  /** A prepared VM (throws when none can be allocated). */
  takeVm(): PreparedVm;
  /** Frees `vm` and `handles` later, off the response path. */
  releaseVm(vm: PreparedVm, handles: Array<{ alive: boolean; dispose(): void }>): void;
  /** Frees `vm` and `handles` now. */
  freeVm(vm: PreparedVm, handles: Array<{ alive: boolean; dispose(): void }>): void;
  /** A host exception unwound the VM: new cells must use a fresh wasm module. */
  poisoned(): void;
  /** Decides the wasm heap's growth; charged with the running cell (heap-guard.ts). */
  readonly heap?: HeapGuard;
}

/** Characters of tool-call inputs and notifications in flight at once: more ends the cell. */
export const MAX_IN_FLIGHT_CHARS = 4 << 20;
export const MAX_TIMERS = 10_000;
export const MAX_CALLS_IN_FLIGHT = 1_000;

/** How often (and after how long inside the VM) `whileBusy` is called. */
const BUSY_POLL_MS = 20;
/** Least VM time between two measurements of a runtime's memory. */
const MEASURE_EVERY_MS = 25;
/** VM time from which a cell's memory is also measured when it completes. */
const END_MEASURE_MIN_MS = 2;
const LONG_ENTRY_MS = 1;

interface Observer {
  resolve(r: RuntimeResponse): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

type Disposable = { alive: boolean; dispose(): void };

export class Cell {
  private vm: PreparedVm | undefined;
  private main: QuickJSHandle | undefined;
  private readonly liveHandles = new Set<Disposable>();
  private readonly output = new CellOutput();
  private final: RuntimeResponse | undefined;
  private delivered = false;
  private observer: Observer | undefined;
  private yieldRequested = false;
  private readonly writes: CellWrites;
  /** Nested tool calls in flight: cancelled whenever the cell ends. */
  private readonly calls = new Set<AbortController>();
  /** Notifications in flight: cancelled by termination, drained by natural completion. */
  private readonly notes = new Set<AbortController>();
  private closeWhenDrained = false;
  private readonly timers = new Map<number, ReturnType<typeof setTimeout>>();
  private toolSeq = 0;
  private inFlightChars = 0;
  private cpuUsedMs = 0;
  private entryStart = 0;
  private inVm = false;
  private interruptReason: "cpu" | "terminate" | undefined;
  /** The limit the cell hit (memory, output, calls in flight): it ends with this as its error. */
  private limitHit: string | undefined;
  private readonly account: HeapAccount;
  /** VM time at the last measurement of the runtime's memory, and what the measurement cost. */
  private lastMeasure = 0;
  private measureCostMs = 0;
  private terminating = false;
  private broken = false;
  private lastPoll = 0;

  constructor(
    readonly id: string,
    private readonly engine: CellHost,
    private readonly limits: Limits,
    private readonly delegate: EngineDelegate,
    stored: StoredValues,
    private readonly req: ExecuteRequest,
    private readonly onClosed: () => void,
  ) {
    this.writes = new CellWrites(stored);
    this.account = { grownBytes: 0, limitBytes: limits.memoryLimitBytes, refused: (why) => this.hitLimit(`ran out of memory: ${why}`) };
  }

  /** Ends the cell at the next interrupt check (a script cannot catch that). */
  private hitLimit(why: string): void {
    this.limitHit ??= `exec cell ${this.id} ${why}`;
  }

  get finalResponse(): RuntimeResponse | undefined {
    return this.final;
  }

  // ---- observation -------------------------------------------------------------------------

  /**
   * The cell's next yield, result or termination. `onResponse` hears it synchronously, at the
   * moment it is decided (the host writes it in the same turn); the promise settles after.
   */
  observe(yieldTimeMs: number, onResponse?: (r: RuntimeResponse) => void): Result<Promise<RuntimeResponse>> {
    if (this.observer) return err("busy_observer", `exec cell ${this.id} already has an active observer`);
    const now = (r: RuntimeResponse) => {
      onResponse?.(r);
      return ok(Promise.resolve(r));
    };
    if (this.final) return now(this.deliverFinal());
    if (this.yieldRequested) {
      this.yieldRequested = false;
      return now(this.yielded());
    }
    return ok(
      new Promise<RuntimeResponse>((resolvePromise) => {
        const resolve = (r: RuntimeResponse) => {
          onResponse?.(r);
          resolvePromise(r);
        };
        const obs: Observer = { resolve, timer: undefined };
        obs.timer = setTimeout(() => {
          if (this.observer !== obs) return;
          this.observer = undefined;
          resolve(this.yielded());
        }, yieldTimeMs);
        this.observer = obs;
      }),
    );
  }

  private yielded(): RuntimeResponse {
    return { Yielded: { cell_id: this.id, content_items: this.output.drain() } };
  }

  /** Hands out the final response; the cell closes once its notifications are settled too. */
  private deliverFinal(): RuntimeResponse {
    const r = this.final!;
    if (!this.delivered) {
      this.delivered = true;
      if (this.notes.size === 0) queueMicrotask(this.onClosed);
      else this.closeWhenDrained = true;
    }
    return r;
  }

  private requestYield(): void {
    const obs = this.observer;
    if (!obs) {
      this.yieldRequested = true;
      return;
    }
    clearTimeout(obs.timer);
    this.observer = undefined;
    obs.resolve(this.yielded());
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  start(source: string): void {
    if (this.final) return; // terminated before it started
    let vm: PreparedVm;
    try {
      vm = this.engine.takeVm();
    } catch (e) {
      this.finish({ Result: { cell_id: this.id, content_items: [], error_text: `could not start a JS runtime: ${(e as Error).message}` } });
      return;
    }
    this.vm = vm;
    const adopted = this.enter(() => vm.adopt(this.owner(), this.limits.memoryLimitBytes, this.req.enabled_tools ?? []));
    if (adopted !== undefined) return this.fail(adopted);
    const evaluated = this.enter(() => {
      const r = vm.ctx.evalCode(source, "exec_main.mjs", { type: "module" });
      if (r.error) {
        const e = this.errorText(r.error);
        r.error.dispose();
        return e;
      }
      this.main = r.value;
      return undefined;
    });
    if (evaluated === EXIT_SENTINEL) return this.complete(null);
    if (evaluated !== undefined) return this.fail(evaluated);
    this.pump();
  }

  /** Stops the cell now (natural completion wins); its stored writes are discarded. */
  terminate(): RuntimeResponse {
    if (this.final) {
      if (this.observer) {
        // A pending observer gets the final result; the terminate caller gets it too.
        const obs = this.observer;
        this.observer = undefined;
        clearTimeout(obs.timer);
        obs.resolve(this.final);
      }
      return this.deliverFinal();
    }
    this.terminating = true;
    this.interruptReason = "terminate";
    this.writes.discard();
    this.finish({ Terminated: { cell_id: this.id, content_items: this.output.drain() } });
    return this.deliverFinal();
  }

  private shouldInterrupt(): boolean {
    if (this.terminating) return true;
    if (this.limitHit || this.overMemory()) return true;
    const now = performance.now();
    if (now - this.entryStart > LONG_ENTRY_MS) this.delegate.longEntry?.();
    if (now - this.entryStart + this.cpuUsedMs > this.limits.cpuLimitMs) {
      this.interruptReason = "cpu";
      return true;
    }
    if (this.delegate.whileBusy && now - this.entryStart > BUSY_POLL_MS && now - this.lastPoll > BUSY_POLL_MS) {
      this.lastPoll = now;
      if (this.delegate.whileBusy(this.id)) {
        this.terminating = true;
        this.interruptReason = "terminate";
        return true;
      }
    }
    return false;
  }

  /**
   * Whether the runtime holds more than the cell's limit. Memory freed by earlier cells is
   * reused without growing the heap, so growth alone does not bound a cell: its usage is
   * measured too, by walking the runtime (tens of ms for a full one), so at most every
   * MEASURE_EVERY_MS of VM time and never more than a fifth of it.
   */
  private overMemory(): boolean {
    const spent = this.cpuUsedMs + (performance.now() - this.entryStart);
    if (!this.vm || spent - this.lastMeasure < Math.max(MEASURE_EVERY_MS, 5 * this.measureCostMs)) return false;
    this.lastMeasure = spent;
    return this.measureMemory();
  }

  /** Measures the runtime; over the limit, the cell has hit it. */
  private measureMemory(): boolean {
    const vm = this.vm;
    if (!vm || this.broken) return false;
    const t = performance.now();
    const used = vm.usedBytes();
    this.measureCostMs = performance.now() - t;
    if (used === undefined || used <= this.limits.memoryLimitBytes) return false;
    this.hitLimit(`ran out of memory: its runtime holds ${Math.round(used / 2 ** 20)} MiB, over its memory limit of ${Math.round(this.limits.memoryLimitBytes / 2 ** 20)} MiB (memory_limit_bytes)`);
    return true;
  }

  /** Runs `fn` inside the VM with CPU accounting; returns an error text or undefined. */
  private enter(fn: () => string | undefined): string | undefined {
    this.entryStart = performance.now();
    this.inVm = true;
    const heap = this.engine.heap;
    if (heap) heap.running = this.account;
    try {
      const error = fn();
      // An interrupt inside pending jobs can come back as success (the job that was cut short
      // just ends): a limit that fired always ends the cell.
      if (this.interruptReason === "cpu") return this.cpuLimitText();
      return this.limitHit ?? error;
    } catch (e) {
      // The VM was unwound by a host exception: never touch this runtime again.
      this.broken = true;
      this.engine.poisoned();
      return `the JS runtime failed: ${(e as Error).message}`;
    } finally {
      if (heap) heap.running = undefined;
      this.inVm = false;
      this.cpuUsedMs += performance.now() - this.entryStart;
    }
  }

  private cpuLimitText(): string {
    return `exec cell ${this.id} exceeded its CPU time limit of ${this.limits.cpuLimitMs} ms`;
  }

  private errorText(h: QuickJSHandle): string {
    if (this.interruptReason === "cpu") return this.cpuLimitText();
    // A limit wins over whatever the script threw meanwhile (e.g. its own catch of "out of memory").
    if (this.limitHit) return this.limitHit;
    return describeThrown(this.vm!.ctx, h);
  }

  /** Runs pending jobs, then decides whether the cell finished. */
  private pump(): void {
    if (this.final || !this.vm) return;
    const rt = this.vm.rt;
    const jobErr = this.enter(() => {
      const r = rt.executePendingJobs(-1);
      if ("error" in r && r.error) {
        const e = this.errorText(r.error);
        r.error.dispose();
        return e;
      }
      return undefined;
    });
    if (jobErr === EXIT_SENTINEL) return this.complete(null);
    if (jobErr !== undefined) return this.fail(jobErr);
    this.checkMain();
  }

  private checkMain(): void {
    if (this.final || !this.vm || !this.main) return;
    const ctx = this.vm.ctx;
    const st = ctx.getPromiseState(this.main);
    if (st.type === "pending") {
      if (this.calls.size === 0 && this.notes.size === 0 && this.timers.size === 0) {
        this.fail("the script is awaiting a promise that can never settle (no tool call or timer is pending)");
      }
      return;
    }
    if (st.type === "fulfilled") {
      st.value.dispose();
      return this.complete(null);
    }
    const text = this.errorText(st.error);
    st.error.dispose();
    if (text === EXIT_SENTINEL) return this.complete(null);
    this.fail(text);
  }

  private complete(errorText: string | null): void {
    if (this.final) return;
    // A script that caught the limit's error and went on still hit it; one too quick to be
    // measured while it ran is measured at its end (a trivial cell is not: that costs ~1 ms).
    if (errorText === null && !this.limitHit && this.cpuUsedMs >= END_MEASURE_MIN_MS) this.measureMemory();
    if (errorText === null && this.limitHit) errorText = this.limitHit;
    if (errorText === null && !this.terminating) errorText = this.unhandledRejection() ?? null;
    if (this.terminating) {
      // Interrupted by an out-of-band terminate: the pending terminate request will find this.
      this.writes.discard();
      this.finish({ Terminated: { cell_id: this.id, content_items: this.output.drain() } });
      return;
    }
    if (errorText === null) this.writes.commit();
    else this.writes.discard();
    this.finish({ Result: { cell_id: this.id, content_items: this.output.drain(), error_text: errorText } });
  }

  /** The cell's error when it ends with a rejection nothing handled (see vm.ts TRACKER_SOURCE). */
  private unhandledRejection(): string | undefined {
    const vm = this.vm;
    if (!vm || this.broken) return undefined;
    let text: string | undefined;
    this.enter(() => {
      const reasons = vm.unhandledRejections();
      if (reasons.length > 0) text = `Unhandled promise rejection: ${reasons[0]}${reasons.length > 1 ? ` (and ${reasons.length - 1} more)` : ""}`;
      return undefined;
    });
    return text;
  }

  private fail(text: string): void {
    this.complete(text);
  }

  private finish(r: RuntimeResponse): void {
    if (this.final) return;
    this.final = r;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const c of this.calls) c.abort();
    this.calls.clear();
    if ("Terminated" in r) for (const c of this.notes) c.abort();
    const large = this.mayHoldMuch();
    if (!large) this.releaseVm(false);
    const obs = this.observer;
    if (obs) {
      this.observer = undefined;
      clearTimeout(obs.timer);
      obs.resolve(this.deliverFinal());
    }
    // After the answer went out: a large runtime freed later would hold heap the next cell needs.
    if (large) this.releaseVm(true);
  }

  /** Whether the runtime may hold much of the heap: it grew it, hit a limit or ran long enough to be measured. */
  private mayHoldMuch(): boolean {
    return this.account.grownBytes > 0 || this.limitHit !== undefined || this.cpuUsedMs >= MEASURE_EVERY_MS;
  }

  private releaseVm(now: boolean): void {
    const vm = this.vm;
    this.vm = undefined;
    const handles = [...this.liveHandles, ...(this.main ? [this.main] : [])];
    // Freeing a runtime left inconsistent by an unwound host exception aborts wasm: leak it.
    if (vm && !this.broken) {
      if (now) this.engine.freeVm(vm, handles);
      else this.engine.releaseVm(vm, handles);
    }
    this.liveHandles.clear();
    this.main = undefined;
  }

  // ---- globals -----------------------------------------------------------------------------

  private owner(): VmOwner {
    return {
      room: (route) => this.room(route),
      text: (s, length) => this.text(s, length),
      notify: (s, length) => this.notify(s, length),
      store: (k, v, length) => (length > v.length ? this.writes.overBudget(k) : this.writes.set(k, v)),
      load: (k) => this.writes.get(k),
      yieldNow: () => this.requestYield(),
      setTimer: (id, ms) => {
        if (this.timers.size >= MAX_TIMERS) return `too many pending timers (at most ${MAX_TIMERS})`;
        const t = setTimeout(() => {
          this.timers.delete(id);
          this.fireTimer(id);
        }, ms);
        this.timers.set(id, t);
        return undefined;
      },
      clearTimer: (id) => {
        const t = this.timers.get(id);
        if (t !== undefined) clearTimeout(t);
        this.timers.delete(id);
      },
      tool: (name, input, length) => this.invokeTool(name, input, length),
      shouldInterrupt: () => this.shouldInterrupt(),
      ending: () => this.limitHit !== undefined,
    };
  }

  private room(route: "text" | "store" | "tool"): number {
    if (route === "store") return this.writes.roomChars();
    if (route === "tool") return MAX_IN_FLIGHT_CHARS - this.inFlightChars;
    return this.output.room;
  }

  private text(s: string, length: number): string | undefined {
    const limit = this.output.add(s, length);
    if (limit === undefined) return undefined;
    this.hitLimit(limit);
    return this.limitHit;
  }

  /** Input characters in flight, or the limit the new ones would break (which ends the cell). */
  private takeInFlight(chars: number, cut: boolean): string | undefined {
    if (cut || this.inFlightChars + chars > MAX_IN_FLIGHT_CHARS) {
      this.hitLimit(`has more than ${MAX_IN_FLIGHT_CHARS} characters of tool-call inputs and notifications in flight`);
      return this.limitHit;
    }
    this.inFlightChars += chars;
    return undefined;
  }

  private tooManyCalls(): string | undefined {
    return this.calls.size + this.notes.size >= MAX_CALLS_IN_FLIGHT ? `too many tool calls and notifications in flight (at most ${MAX_CALLS_IN_FLIGHT})` : undefined;
  }

  private notify(text: string, length: number): string | undefined {
    const busy = this.tooManyCalls() ?? this.takeInFlight(text.length, false);
    if (busy) return busy;
    const chars = text.length;
    // The VM already cut it to MAX_NOTIFY_CHARS; `length` is what the script passed.
    if (length > text.length) text = `${text}\n[... ${length - text.length} characters dropped]`;
    const c = new AbortController();
    this.notes.add(c);
    void this.delegate
      .notify({ call_id: this.req.tool_call_id, cell_id: this.id, text }, c.signal)
      .catch(() => undefined)
      .then(() => {
        this.notes.delete(c);
        this.inFlightChars -= chars;
        if (this.closeWhenDrained && this.notes.size === 0) {
          this.closeWhenDrained = false;
          this.onClosed();
        }
        if (!this.final && !this.inVm) this.checkMain();
      });
    return undefined;
  }

  private invokeTool(name: string, input: string, length: number): QuickJSHandle | string {
    const busy = this.tooManyCalls() ?? this.takeInFlight(input.length, length > input.length);
    if (busy) return busy;
    const chars = input.length;
    const deferred = this.vm!.ctx.newPromise();
    this.liveHandles.add(deferred);
    const n = ++this.toolSeq;
    const tool = this.req.enabled_tools?.find((t) => t.name === name);
    const ctrl = new AbortController();
    this.calls.add(ctrl);
    let parsed: unknown;
    try {
      parsed = input === "" ? undefined : JSON.parse(input);
    } catch {
      parsed = input;
    }
    void this.delegate
      .invokeTool(
        { cell_id: this.id, call_id: this.req.tool_call_id, runtime_tool_call_id: `tool-${n}`, tool_name: name, tool_kind: tool?.kind ?? "function", input: parsed },
        ctrl.signal,
      )
      .catch((e: unknown) => err(CodeModeErrorCode.Runtime, (e as Error)?.message ?? String(e)))
      .then((r) => {
        this.calls.delete(ctrl);
        this.inFlightChars -= chars;
        if (this.final || !this.vm || !deferred.alive) return;
        const fail = this.settleToolCall(this.vm, deferred, r);
        deferred.dispose();
        this.liveHandles.delete(deferred);
        if (fail !== undefined) return this.fail(fail);
        this.pump();
      });
    return deferred.handle.dup();
  }

  /**
   * Resolves the script's promise with the tool's value, or rejects it with the error message.
   * A value that cannot become a VM value (a cycle, nesting too deep for either JSON parser)
   * rejects it too: it is the call's failure, not the VM's, so it must not end up in `enter`'s
   * catch (which retires the runtime).
   */
  private settleToolCall(vm: PreparedVm, deferred: QuickJSDeferredPromise, r: Result<unknown>): string | undefined {
    let json: string | undefined;
    let problem = "error" in r ? r.error.message : undefined;
    if (!("error" in r) && r.ok !== undefined) {
      try {
        json = JSON.stringify(r.ok);
      } catch (e) {
        problem = `the result of the tool call cannot be passed to the script: ${(e as Error).message}`;
      }
    }
    const c = vm.ctx;
    return this.enter(() => {
      if (problem !== undefined) {
        const m = c.newString(problem);
        deferred.reject(m);
        m.dispose();
        return undefined;
      }
      if (json === undefined) {
        deferred.resolve(c.undefined);
        return undefined;
      }
      const v = vm.parseJson(json);
      if (v.error) {
        deferred.reject(v.error);
        v.error.dispose();
      } else {
        deferred.resolve(v.value);
        v.value.dispose();
      }
      return undefined;
    });
  }

  private fireTimer(id: number): void {
    if (this.final || !this.vm) return;
    const vm = this.vm;
    const e = this.enter(() => {
      const thrown = vm.fireTimer(id);
      if (!thrown) return undefined;
      const t = this.errorText(thrown);
      thrown.dispose();
      return t;
    });
    if (e === EXIT_SENTINEL) return this.complete(null);
    if (e !== undefined) return this.fail(e);
    this.pump();
  }
}

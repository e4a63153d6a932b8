/**
 * One cell: a prepared QuickJS VM (src/codemode/vm.ts) running one script, from its start to
 * its final response. The cell joins the parts that hold its state: its limits (budget.ts),
 * its replies to observers (replies.ts), its output (output.ts), stored values
 * (../stored.ts), timers (timers.ts) and the tool calls and notifications in flight
 * (in-flight.ts). Everything the script can make the host hold is capped, because it
 * lives outside the QuickJS memory limit.
 */

import type { QuickJSHandle } from "quickjs-emscripten-core";
import { CodeModeErrorCode, type ExecuteRequest, type RuntimeResponse } from "../../contracts/code-mode.ts";
import { err, type Result } from "../../util/result.ts";
import { EXIT_SENTINEL } from "../prelude.ts";
import { CellWrites, type StoredValues } from "../stored.ts";
import { trackAsync } from "../track-async.ts";
import type { PreparedVm, VmOwner } from "../vm.ts";
import { CellBudget } from "./budget.ts";
import type { CellHost, Disposable, EngineDelegate, Limits } from "./contract.ts";
import { InFlight } from "./in-flight.ts";
import { CellOutput } from "./output.ts";
import { CellReplies } from "./replies.ts";
import { CellTimers } from "./timers.ts";
import { settleStep } from "./tool-result.ts";

export class Cell {
  private vm: PreparedVm | undefined;
  private main: QuickJSHandle | undefined;
  private readonly liveHandles = new Set<Disposable>();
  private readonly output = new CellOutput();
  private readonly writes: CellWrites;
  private readonly budget: CellBudget;
  private readonly replies: CellReplies;
  private readonly inFlight: InFlight;
  private readonly timers = new CellTimers((id) => this.fireTimer(id));
  private toolSeq = 0;

  constructor(
    readonly id: string,
    private readonly engine: CellHost,
    private readonly limits: Limits,
    private readonly delegate: EngineDelegate,
    stored: StoredValues,
    private readonly req: ExecuteRequest,
    onClosed: () => void,
  ) {
    this.writes = new CellWrites(stored);
    this.budget = new CellBudget(id, engine, limits, delegate, () => this.vm);
    this.inFlight = new InFlight((why) => this.budget.hitLimit(why));
    this.replies = new CellReplies(
      id,
      () => this.output.drain(),
      () => this.inFlight.notesPending,
      onClosed,
    );
  }

  get finalResponse(): RuntimeResponse | undefined {
    return this.replies.final;
  }

  /**
   * The cell's next yield, result or termination. `onResponse` hears it synchronously, at the
   * moment it is decided (the host writes it in the same turn); the promise settles after.
   */
  observe(
    yieldTimeMs: number,
    onResponse?: (r: RuntimeResponse) => void,
  ): Result<Promise<RuntimeResponse>, "busy_observer"> {
    return this.replies.observe(yieldTimeMs, onResponse);
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  start(source: string): void {
    if (this.replies.final) return; // terminated before it started
    let vm: PreparedVm;
    try {
      vm = this.engine.takeVm();
    } catch (e) {
      this.finish({
        Result: {
          cell_id: this.id,
          content_items: [],
          error_text: `could not start a JS runtime: ${(e as Error).message}`,
        },
      });
      return;
    }
    this.vm = vm;
    const adopted = this.budget.enter(() =>
      vm.adopt(this.owner(), this.limits.memoryLimitBytes, this.req.enabled_tools ?? []),
    );
    if (adopted !== undefined) return this.complete(adopted);
    const evaluated = this.budget.enter(() => {
      const r = vm.ctx.evalCode(trackedSource(vm, source), "exec_main.mjs", { type: "module" });
      if (r.error) return this.budget.thrownText(r.error);
      this.main = r.value;
      return undefined;
    });
    this.afterEntry(evaluated);
  }

  /** Stops the cell now (natural completion wins); its stored writes are discarded. */
  terminate(): RuntimeResponse {
    if (this.replies.final) return this.replies.finalForTerminate();
    this.budget.terminate();
    this.writes.discard();
    this.finish({ Terminated: { cell_id: this.id, content_items: this.output.drain() } });
    return this.replies.deliverFinal();
  }

  /** After a VM entry: the script exited, failed, or goes on (its pending jobs run). */
  private afterEntry(e: string | undefined): void {
    if (e === EXIT_SENTINEL) return this.complete(null);
    if (e !== undefined) return this.complete(e);
    this.pump();
  }

  /** Runs pending jobs, then decides whether the cell finished. */
  private pump(): void {
    if (this.replies.final || !this.vm) return;
    const rt = this.vm.rt;
    const jobErr = this.budget.enter(() => {
      const r = rt.executePendingJobs(-1);
      return "error" in r && r.error ? this.budget.thrownText(r.error) : undefined;
    });
    if (jobErr === EXIT_SENTINEL) return this.complete(null);
    if (jobErr !== undefined) return this.complete(jobErr);
    this.checkMain();
  }

  private checkMain(): void {
    if (this.replies.final || !this.vm || !this.main) return;
    const st = this.vm.ctx.getPromiseState(this.main);
    if (st.type === "pending") {
      if (this.inFlight.idle && this.timers.size === 0) {
        this.complete("the script is awaiting a promise that can never settle (no tool call or timer is pending)");
      }
      return;
    }
    if (st.type === "fulfilled") {
      st.value.dispose();
      return this.complete(null);
    }
    const text = this.budget.thrownText(st.error);
    this.complete(text === EXIT_SENTINEL ? null : text);
  }

  /** Ends the cell with `errorText` (null: it succeeded), unless a limit or a terminate says otherwise. */
  private complete(errorText: string | null): void {
    if (this.replies.final) return;
    if (errorText === null) errorText = this.budget.measureAtEnd() ?? null;
    if (errorText === null && !this.budget.terminating) errorText = this.unhandledRejection() ?? null;
    if (this.budget.terminating) {
      // Interrupted by an out-of-band terminate: the pending terminate request will find this.
      this.writes.discard();
      this.finish({ Terminated: { cell_id: this.id, content_items: this.output.drain() } });
      return;
    }
    if (errorText === null) this.writes.commit();
    else this.writes.discard();
    this.finish({ Result: { cell_id: this.id, content_items: this.output.drain(), error_text: errorText } });
  }

  /** The cell's error when it ends with a rejection nothing handled (see vm-tracker.ts TRACKER_SOURCE). */
  private unhandledRejection(): string | undefined {
    const vm = this.vm;
    if (!vm || this.budget.broken) return undefined;
    let text: string | undefined;
    this.budget.enter(() => {
      const reasons = vm.unhandledRejections();
      if (reasons.length > 0)
        text = `Unhandled promise rejection: ${reasons[0]}${reasons.length > 1 ? ` (and ${reasons.length - 1} more)` : ""}`;
      return undefined;
    });
    return text;
  }

  private finish(r: RuntimeResponse): void {
    if (!this.replies.decide(r)) return;
    this.timers.clearAll();
    this.inFlight.cancelCalls();
    if ("Terminated" in r) this.inFlight.cancelNotes();
    const large = this.budget.mayHoldMuch();
    if (!large) this.releaseVm(false);
    this.replies.answerObserver();
    // After the answer went out: a large runtime freed later would hold heap the next cell needs.
    if (large) this.releaseVm(true);
  }

  private releaseVm(now: boolean): void {
    const vm = this.vm;
    this.vm = undefined;
    const handles = [...this.liveHandles, ...(this.main ? [this.main] : [])];
    // Freeing a runtime left inconsistent by an unwound host exception aborts wasm: leak it.
    if (vm && !this.budget.broken) {
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
      yieldNow: () => this.replies.requestYield(),
      setTimer: (id, ms) => this.timers.set(id, ms),
      clearTimer: (id) => this.timers.clear(id),
      tool: (name, input, length) => this.invokeTool(name, input, length),
      shouldInterrupt: () => this.budget.shouldInterrupt(),
      ending: () => this.budget.limitHit !== undefined,
    };
  }

  private room(route: "text" | "store" | "tool"): number {
    if (route === "store") return this.writes.roomChars();
    if (route === "tool") return this.inFlight.room;
    return this.output.room;
  }

  private text(s: string, length: number): string | undefined {
    const limit = this.output.add(s, length);
    return limit === undefined ? undefined : this.budget.hitLimit(limit);
  }

  private notify(text: string, length: number): string | undefined {
    const busy = this.inFlight.admit(text.length, false);
    if (busy) return busy;
    const chars = text.length;
    // The VM already cut it to MAX_NOTIFY_CHARS; `length` is what the script passed.
    if (length > text.length) text = `${text}\n[... ${length - text.length} characters dropped]`;
    const c = this.inFlight.startNote();
    void this.delegate
      .notify({ call_id: this.req.tool_call_id, cell_id: this.id, text }, c.signal)
      .catch(() => undefined)
      .then(() => {
        this.inFlight.end(c, chars);
        this.replies.noteSettled();
        if (!this.replies.final && !this.budget.inVm) this.checkMain();
      });
    return undefined;
  }

  private invokeTool(name: string, input: string, length: number): QuickJSHandle | string {
    const busy = this.inFlight.admit(input.length, length > input.length);
    if (busy) return busy;
    const chars = input.length;
    const deferred = this.vm!.ctx.newPromise();
    this.liveHandles.add(deferred);
    const n = ++this.toolSeq;
    const tool = this.req.enabled_tools?.find((t) => t.name === name);
    const ctrl = this.inFlight.startCall();
    void this.delegate
      .invokeTool(
        {
          cell_id: this.id,
          call_id: this.req.tool_call_id,
          runtime_tool_call_id: `tool-${n}`,
          tool_name: name,
          tool_kind: tool?.kind ?? "function",
          input: parseToolInput(input),
        },
        ctrl.signal,
      )
      .catch((e: unknown) => err(CodeModeErrorCode.Runtime, (e as Error)?.message ?? String(e)))
      .then((r) => {
        this.inFlight.end(ctrl, chars);
        if (this.replies.final || !this.vm || !deferred.alive) return;
        const fail = this.budget.enter(settleStep(this.vm, deferred, r));
        deferred.dispose();
        this.liveHandles.delete(deferred);
        if (fail !== undefined) return this.complete(fail);
        this.pump();
      });
    return deferred.handle.dup();
  }

  private fireTimer(id: number): void {
    if (this.replies.final || !this.vm) return;
    const vm = this.vm;
    const e = this.budget.enter(() => {
      const thrown = vm.fireTimer(id);
      return thrown ? this.budget.thrownText(thrown) : undefined;
    });
    this.afterEntry(e);
  }
}

/** A tool call's input as the script passed it: JSON when it parses, else the text itself. */
function parseToolInput(input: string): unknown {
  try {
    return input === "" ? undefined : JSON.parse(input);
  } catch {
    return input;
  }
}

/**
 * The cell with its async functions and import() made visible to the rejection tracker
 * (track-async.ts), when the rewrite compiles; else the cell as written.
 */
function trackedSource(vm: PreparedVm, source: string): string {
  const tracked = trackAsync(source);
  if (tracked === source) return source;
  const compiled = vm.ctx.evalCode(tracked, "exec_check.mjs", { type: "module", compileOnly: true });
  if (compiled.error) {
    compiled.error.dispose();
    return source;
  }
  compiled.value.dispose();
  return tracked;
}

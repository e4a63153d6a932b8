/**
 * A QuickJS runtime + context with the code-mode globals already installed. The engine prepares
 * the next VM off the request path, so a cell only binds itself (`adopt`) and evaluates its
 * source. The globals are host functions rather than a JS prelude: QuickJS (as wasm) compiles
 * about 13 KB of source per ms, and a 3 KB prelude was two thirds of preparing a VM. They reach
 * the cell through `owner`, which stays unset until adoption.
 */

import type {
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSWASMModule,
  VmCallResult,
} from "quickjs-emscripten-core";
import type { ExecuteRequest } from "../contracts/code-mode.ts";
import { EXIT_SENTINEL, normalizeToolIdentifier } from "./prelude.ts";
import { TRACKER_SOURCE } from "./vm-tracker.ts";

type ToolDefinition = NonNullable<ExecuteRequest["enabled_tools"]>[number];

/** Small enough that QuickJS reports `stack overflow` before the host's native stack runs out. */
const MAX_STACK_BYTES = 256 * 1024;

/** Ambient capabilities a script must not have. */
const REMOVED_GLOBALS = ["console", "Atomics", "SharedArrayBuffer", "WebAssembly"];

/**
 * What the globals call. A returned string is an error message thrown into the script as a
 * RangeError (a limit was hit); `undefined` means done.
 */
export interface VmOwner {
  /**
   * How many characters a text, a stored value or a tool call's input may have now: a longer
   * one is cut there inside the VM (so the host never copies more), and `length` says how long
   * it was.
   */
  room(route: "text" | "store" | "tool"): number;
  text(s: string, length: number): string | undefined;
  notify(s: string, length: number): string | undefined;
  store(key: string, json: string, length: number): string | undefined;
  /** The stored JSON text, or undefined. */
  load(key: string): string | undefined;
  yieldNow(): void;
  setTimer(id: number, ms: number): string | undefined;
  clearTimer(id: number): void;
  /** A promise handle (settled later by the owner, see `fromJson`), or an error message. */
  tool(name: string, input: string, length: number): QuickJSHandle | string;
  shouldInterrupt(): boolean;
  /** Whether the cell hit a limit that ends it. */
  ending(): boolean;
}

/** Text copied out of the VM: at most the characters asked for, and how long it really was. */
interface Taken {
  text: string;
  length: number;
}

/** Longest `notify` text kept (the rest is dropped with a note) and longest stored key. */
export const MAX_NOTIFY_CHARS = 64 * 1024;
const MAX_KEY_CHARS = 4096;

/** What a global returns: nothing, a value, or `{error}` to throw. */
type Returned = QuickJSHandle | VmCallResult<QuickJSHandle> | undefined;

/**
 * Built-ins captured before any script runs: a script that overwrites `JSON.stringify` or
 * `String` only breaks itself, never the globals.
 */
interface Intrinsics {
  stringify: QuickJSHandle;
  parse: QuickJSHandle;
  toString: QuickJSHandle;
  slice: QuickJSHandle;
  freeze: QuickJSHandle;
  isArray: QuickJSHandle;
  rangeError: QuickJSHandle;
  typeError: QuickJSHandle;
  trackWrap: QuickJSHandle;
  trackReport: QuickJSHandle;
}

export class PreparedVm {
  owner: VmOwner | undefined;
  private intrinsics: Intrinsics | undefined;
  /** Callbacks of pending `setTimeout`s, by id. */
  private readonly timers = new Map<number, QuickJSHandle>();
  private nextTimer = 0;

  private constructor(
    readonly module: QuickJSWASMModule,
    readonly rt: QuickJSRuntime,
    readonly ctx: QuickJSContext,
  ) {}

  /** Throws when the module cannot allocate a runtime (the caller reports it as the cell's error). */
  static create(module: QuickJSWASMModule, memoryLimitBytes: number): PreparedVm {
    const rt = module.newRuntime();
    try {
      rt.setMemoryLimit(memoryLimitBytes);
      rt.setMaxStackSize(MAX_STACK_BYTES);
      rt.setModuleLoader((name) => ({ error: new Error(`Unsupported import in exec: ${name}`) }));
      const vm = new PreparedVm(module, rt, rt.newContext());
      rt.setInterruptHandler(() => vm.owner?.shouldInterrupt() ?? false);
      vm.install();
      return vm;
    } catch (e) {
      rt.dispose();
      throw e;
    }
  }

  /** Binds the VM to its cell, applies the cell's memory limit and defines `tools`/`ALL_TOOLS`. */
  adopt(owner: VmOwner, memoryLimitBytes: number, tools: readonly ToolDefinition[]): string | undefined {
    this.owner = owner;
    this.rt.setMemoryLimit(memoryLimitBytes);
    try {
      this.defineTools(tools);
      return undefined;
    } catch (e) {
      return `could not set up the globals: ${(e as Error).message}`;
    }
  }

  /**
   * Bytes the runtime holds, by QuickJS's own walk of its objects ("memory used" in its dump:
   * the counter its memory limit uses is blind in wasm builds, see heap-guard.ts). Undefined
   * when the dump cannot be read.
   */
  usedBytes(): number | undefined {
    const m = /^memory used\s+\d+\s+(\d+)/m.exec(this.rt.dumpMemoryUsage());
    return m ? Number(m[1]) : undefined;
  }

  /** What the script's unhandled rejections were rejected with (see vm-tracker.ts). */
  unhandledRejections(): string[] {
    const h = this.ctx.unwrapResult(this.ctx.callFunction(this.i.trackReport, this.ctx.undefined));
    try {
      const list = this.ctx.dump(h) as unknown;
      return Array.isArray(list) ? list.map(String) : [];
    } finally {
      h.dispose();
    }
  }

  /** A VM value parsed from JSON text (the caller disposes it). */
  fromJson(json: string): QuickJSHandle {
    return this.ctx.unwrapResult(this.parseJson(json));
  }

  /** Like fromJson, but a parse failure (e.g. nesting deeper than the VM's stack) comes back as the VM's error value. */
  parseJson(json: string): VmCallResult<QuickJSHandle> {
    const s = this.ctx.newString(json);
    try {
      return this.ctx.callFunction(this.i.parse, this.ctx.undefined, s);
    } finally {
      s.dispose();
    }
  }

  /** Runs the JS callback of timer `id`; returns the thrown value's handle, if any (caller disposes). */
  fireTimer(id: number): QuickJSHandle | undefined {
    const fn = this.timers.get(id);
    if (!fn) return undefined;
    this.timers.delete(id);
    const r = this.ctx.callFunction(fn, this.ctx.undefined);
    fn.dispose();
    if (r.error) return r.error;
    r.value.dispose();
    return undefined;
  }

  /** Frees the VM and the given handles (which belong to its context). */
  dispose(handles: Iterable<{ alive: boolean; dispose(): void }> = []): void {
    this.owner = undefined;
    for (const h of handles) if (h.alive) h.dispose();
    for (const fn of this.timers.values()) if (fn.alive) fn.dispose();
    this.timers.clear();
    for (const h of Object.values(this.intrinsics ?? {})) if (h.alive) h.dispose();
    try {
      this.ctx.dispose();
      this.rt.dispose();
    } catch {
      // A leaked handle only costs memory; the VM is gone either way.
    }
  }

  // ---- globals -----------------------------------------------------------------------------

  private get i(): Intrinsics {
    return this.intrinsics!;
  }

  private install(): void {
    const ctx = this.ctx;
    const removed = ctx.evalCode(
      REMOVED_GLOBALS.map((g) => `delete globalThis.${g};`).join("") + TRACKER_SOURCE,
      "relay_globals.js",
    );
    if (removed.error) {
      const e = ctx.dump(removed.error) as unknown;
      removed.error.dispose();
      throw new Error(`could not set up the globals: ${JSON.stringify(e)}`);
    }
    const tracker = removed.value;
    const get = (path: string): QuickJSHandle => {
      let v: QuickJSHandle = ctx.global.dup();
      for (const key of path.split(".")) {
        const next = ctx.getProp(v, key);
        v.dispose();
        v = next;
      }
      return v;
    };
    this.intrinsics = {
      stringify: get("JSON.stringify"),
      parse: get("JSON.parse"),
      toString: ctx.getProp(ctx.global, "String"),
      slice: get("String.prototype.slice"),
      freeze: get("Object.freeze"),
      isArray: get("Array.isArray"),
      rangeError: ctx.getProp(ctx.global, "RangeError"),
      typeError: ctx.getProp(ctx.global, "TypeError"),
      trackWrap: ctx.getProp(tracker, "wrap"),
      trackReport: ctx.getProp(tracker, "report"),
    };
    tracker.dispose();
    this.defineOutputs();
    this.defineTimers();
  }

  /** text, notify, store, load, yield_control and exit. */
  private defineOutputs(): void {
    const ctx = this.ctx;
    this.define("text", (v) => this.withText(v, this.room("text"), (s, n) => this.check(this.owner?.text(s, n))));
    this.define("notify", (v) =>
      this.withText(v, MAX_NOTIFY_CHARS, (s, n) =>
        s.trim() === ""
          ? this.throwError("typeError", "notify expects non-empty text")
          : this.check(this.owner?.notify(s, n)),
      ),
    );
    this.define("store", (key, value) => {
      const k = this.string(key, MAX_KEY_CHARS);
      if (!("text" in k)) return k;
      if (k.length > MAX_KEY_CHARS)
        return this.throwError("rangeError", `a stored value's key has at most ${MAX_KEY_CHARS} characters`);
      const s = value === undefined ? undefined : this.stringify(value, this.room("store"));
      if (s === undefined || !("text" in s)) {
        s?.error.dispose();
        return this.throwError(
          "typeError",
          `Unable to store ${JSON.stringify(k.text)}. Only plain serializable objects can be stored.`,
        );
      }
      return this.check(this.owner?.store(k.text, s.text, s.length));
    });
    this.define("load", (key) => {
      const k = this.string(key, MAX_KEY_CHARS);
      if (!("text" in k)) return k;
      const s = k.length > MAX_KEY_CHARS ? undefined : this.owner?.load(k.text);
      return s === undefined ? undefined : this.fromJson(s);
    });
    this.define("yield_control", () => void this.owner?.yieldNow());
    this.define("exit", () => ({ error: ctx.newString(EXIT_SENTINEL) }));
  }

  private defineTimers(): void {
    const ctx = this.ctx;
    this.define("setTimeout", (fn, ms) => {
      if (fn === undefined || ctx.typeof(fn) !== "function")
        return this.throwError("typeError", "setTimeout expects a function callback");
      const n = ms !== undefined && ctx.typeof(ms) === "number" ? ctx.getNumber(ms) : 0;
      const delay = Number.isFinite(n) && n > 0 ? n : 0;
      const id = ++this.nextTimer;
      const refused = this.check(this.owner?.setTimer(id, delay));
      if (refused) return refused;
      this.timers.set(id, fn.dup());
      return ctx.newNumber(id);
    });
    this.define("clearTimeout", (idH) => {
      if (idH === undefined || ctx.typeof(idH) !== "number") return undefined;
      const id = ctx.getNumber(idH);
      const fn = this.timers.get(id);
      if (!(id > 0) || !fn) return undefined;
      fn.dispose();
      this.timers.delete(id);
      this.owner?.clearTimer(id);
      return undefined;
    });
  }

  /** `tools` (one async function per enabled tool) and `ALL_TOOLS`, both frozen. */
  private defineTools(defs: readonly ToolDefinition[]): void {
    const ctx = this.ctx;
    const tools = ctx.newObject();
    const all = ctx.newArray();
    try {
      let n = 0;
      for (const t of defs) {
        const id = normalizeToolIdentifier(t.name);
        const raw = ctx.newFunction(id, (args) => this.callTool(t, args));
        const fn = ctx.unwrapResult(ctx.callFunction(this.i.trackWrap, ctx.undefined, raw));
        raw.dispose();
        ctx.defineProp(tools, id, { value: fn, enumerable: true, configurable: false });
        fn.dispose();
        const entry = ctx.newObject();
        const name = ctx.newString(id);
        const description = ctx.newString(t.description ?? "");
        ctx.setProp(entry, "name", name);
        ctx.setProp(entry, "description", description);
        name.dispose();
        description.dispose();
        this.freeze(entry);
        ctx.setProp(all, n++, entry);
        entry.dispose();
      }
      this.freeze(tools);
      this.freeze(all);
      ctx.defineProp(ctx.global, "tools", { value: tools, enumerable: false, configurable: false });
      ctx.defineProp(ctx.global, "ALL_TOOLS", { value: all, enumerable: false, configurable: false });
    } finally {
      tools.dispose();
      all.dispose();
    }
  }

  /** A tool call: always a promise; bad arguments reject it rather than throw. */
  private callTool(t: ToolDefinition, args: QuickJSHandle | undefined): Returned {
    const ctx = this.ctx;
    const name = t.name;
    const tick = "`";
    let input: Taken;
    const room = this.room("tool");
    if ((t.kind ?? "function") === "freeform") {
      if (args === undefined || ctx.typeof(args) !== "string")
        return this.rejected("typeError", `tool ${tick}${name}${tick} expects a string input`);
      const raw = this.take(args, room);
      input = { text: JSON.stringify(raw.text), length: raw.length };
    } else if (args === undefined || ctx.typeof(args) === "undefined") {
      input = { text: "{}", length: 2 };
    } else {
      if (ctx.typeof(args) !== "object" || this.isNullOrArray(args))
        return this.rejected("typeError", `tool ${tick}${name}${tick} expects a JSON object for arguments`);
      const s = this.stringify(args, room);
      if (s !== undefined && !("text" in s)) {
        s.error.dispose();
        return this.rejected("typeError", `tool ${tick}${name}${tick} arguments are not JSON-serialisable`);
      }
      input = s ?? { text: "", length: 0 };
    }
    const p = this.owner?.tool(name, input.text, input.length) ?? "no cell owns this runtime";
    if (typeof p !== "string") return p;
    // A limit that ends the cell is thrown, so a loop of calls stops at once instead of at the next interrupt check.
    return this.owner?.ending() ? this.throwError("rangeError", p) : this.rejected("rangeError", p);
  }

  private define(name: string, impl: (...args: Array<QuickJSHandle | undefined>) => Returned): void {
    const fn = this.ctx.newFunction(name, (...args) => impl(...args));
    this.ctx.defineProp(this.ctx.global, name, { value: fn, enumerable: false, configurable: false });
    fn.dispose();
  }

  private room(route: "text" | "store" | "tool"): number {
    return Math.max(0, this.owner?.room(route) ?? 0);
  }

  /**
   * Renders a value as the prelude's `text` did: strings as they are, else JSON, else String(v);
   * at most `max` characters of it are copied out of the VM.
   */
  private withText(v: QuickJSHandle | undefined, max: number, then: (s: string, length: number) => Returned): Returned {
    const ctx = this.ctx;
    if (v !== undefined && ctx.typeof(v) === "string") {
      const t = this.take(v, max);
      return then(t.text, t.length);
    }
    const json = v === undefined ? undefined : this.stringify(v, max);
    if (json && "text" in json) return then(json.text, json.length);
    json?.error.dispose();
    const s = this.string(v, max);
    return "text" in s ? then(s.text, s.length) : s;
  }

  /** The first `max` characters of the VM string `h` (cut inside the VM), and its full length. */
  private take(h: QuickJSHandle, max: number): Taken {
    const ctx = this.ctx;
    const lengthH = ctx.getProp(h, "length");
    const length = ctx.getNumber(lengthH);
    lengthH.dispose();
    if (length <= max) return { text: ctx.getString(h), length };
    if (max <= 0) return { text: "", length };
    const [from, to] = [ctx.newNumber(0), ctx.newNumber(max)];
    const cut = ctx.callFunction(this.i.slice, h, from, to);
    from.dispose();
    to.dispose();
    const part = ctx.unwrapResult(cut);
    const text = ctx.getString(part);
    part.dispose();
    return { text, length };
  }

  /** JSON.stringify inside the VM: the text (at most `max` characters), undefined (nothing to serialise) or the thrown error. */
  private stringify(v: QuickJSHandle, max = Number.MAX_SAFE_INTEGER): Taken | undefined | { error: QuickJSHandle } {
    const r = this.ctx.callFunction(this.i.stringify, this.ctx.undefined, v);
    if (r.error) return { error: r.error };
    const out = this.ctx.typeof(r.value) === "string" ? this.take(r.value, max) : undefined;
    r.value.dispose();
    return out;
  }

  /** String(v) inside the VM (at most `max` characters), or `{error}` when the conversion throws. */
  private string(v: QuickJSHandle | undefined, max = Number.MAX_SAFE_INTEGER): Taken | { error: QuickJSHandle } {
    const r = this.ctx.callFunction(this.i.toString, this.ctx.undefined, v ?? this.ctx.undefined);
    if (r.error) return { error: r.error };
    const s = this.take(r.value, max);
    r.value.dispose();
    return s;
  }

  private isNullOrArray(v: QuickJSHandle): boolean {
    const ctx = this.ctx;
    if (ctx.sameValue(v, ctx.null)) return true;
    const r = ctx.callFunction(this.i.isArray, ctx.undefined, v);
    if (r.error) {
      r.error.dispose(); // a revoked Proxy: treated as a plain object, stringify decides
      return false;
    }
    const yes = ctx.sameValue(r.value, ctx.true);
    r.value.dispose();
    return yes;
  }

  private freeze(h: QuickJSHandle): void {
    const r = this.ctx.callFunction(this.i.freeze, this.ctx.undefined, h);
    this.ctx.unwrapResult(r).dispose();
  }

  /** A limit message becomes a thrown RangeError; no message means success. */
  private check(message: string | undefined): Returned {
    return message === undefined ? undefined : this.throwError("rangeError", message);
  }

  private newError(kind: "rangeError" | "typeError", message: string): QuickJSHandle {
    const m = this.ctx.newString(message);
    try {
      // Called without `new`, the error constructors still construct.
      return this.ctx.unwrapResult(this.ctx.callFunction(this.i[kind], this.ctx.undefined, m));
    } finally {
      m.dispose();
    }
  }

  private throwError(kind: "rangeError" | "typeError", message: string): Returned {
    return { error: this.newError(kind, message) };
  }

  private rejected(kind: "rangeError" | "typeError", message: string): QuickJSHandle {
    const d = this.ctx.newPromise();
    const e = this.newError(kind, message);
    d.reject(e);
    e.dispose();
    const p = d.handle.dup();
    d.dispose();
    return p;
  }
}

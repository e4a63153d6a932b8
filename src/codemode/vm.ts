/**
 * A QuickJS runtime + context with the code-mode globals already installed. Building one costs
 * most of a cell (parsing the prelude alone is ~0.3 ms), so the engine prepares the next VM off
 * the request path and a cell only binds itself (`adopt`) and evaluates its source. The host
 * functions reach the cell through `owner`, which stays unset until adoption.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import { normalizeToolIdentifier, PRELUDE_SOURCE } from "./prelude.ts";
import type { ExecuteRequest } from "./protocol.ts";

type ToolDefinition = NonNullable<ExecuteRequest["enabled_tools"]>[number];

/** Small enough that QuickJS reports `stack overflow` before the host's native stack runs out. */
const MAX_STACK_BYTES = 256 * 1024;

/**
 * What the globals call. A returned string is an error message the prelude throws as a
 * RangeError (a limit was hit); `undefined` means done.
 */
export interface VmOwner {
  text(s: string): string | undefined;
  notify(s: string): string | undefined;
  store(key: string, json: string): string | undefined;
  /** The stored JSON text, or undefined. */
  load(key: string): string | undefined;
  yieldNow(): void;
  setTimer(id: number, ms: number): string | undefined;
  clearTimer(id: number): void;
  /** A promise handle that resolves with the tool's JSON text, or an error message. */
  tool(name: string, input: string): QuickJSHandle | string;
  shouldInterrupt(): boolean;
}

const BRIDGE = ["text", "notify", "store", "load", "yieldNow", "setTimer", "clearTimer", "tool"] as const;

export class PreparedVm {
  owner: VmOwner | undefined;
  private helpers: QuickJSHandle | undefined;

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
    const defs = tools.map((t) => ({ name: t.name, id: normalizeToolIdentifier(t.name), description: t.description ?? "", kind: t.kind ?? "function" }));
    return this.callHelper("setTools", (ctx) => ctx.newString(JSON.stringify(defs)));
  }

  /** Runs the JS callback of timer `id`; returns the thrown value's handle, if any (caller disposes). */
  fireTimer(id: number): QuickJSHandle | undefined {
    const ctx = this.ctx;
    const fire = ctx.getProp(this.helpers!, "fire");
    const idH = ctx.newNumber(id);
    const r = ctx.callFunction(fire, this.helpers!, idH);
    fire.dispose();
    idH.dispose();
    if (r.error) return r.error;
    r.value.dispose();
    return undefined;
  }

  /** Frees the VM and the given handles (which belong to its context). */
  dispose(handles: Iterable<{ alive: boolean; dispose(): void }> = []): void {
    this.owner = undefined;
    for (const h of handles) if (h.alive) h.dispose();
    if (this.helpers?.alive) this.helpers.dispose();
    try {
      this.ctx.dispose();
      this.rt.dispose();
    } catch {
      // A leaked handle only costs memory; the VM is gone either way.
    }
  }

  private install(): void {
    const ctx = this.ctx;
    const h = ctx.newObject();
    try {
      const str = (x: QuickJSHandle | undefined) => (x !== undefined && ctx.typeof(x) === "string" ? ctx.getString(x) : "");
      const num = (x: QuickJSHandle | undefined) => (x !== undefined && ctx.typeof(x) === "number" ? ctx.getNumber(x) : 0);
      const msg = (m: string | undefined) => (m === undefined ? undefined : ctx.newString(m));
      const impl: Record<(typeof BRIDGE)[number], (...a: QuickJSHandle[]) => QuickJSHandle | undefined> = {
        text: (v) => msg(this.owner?.text(str(v))),
        notify: (v) => msg(this.owner?.notify(str(v))),
        store: (k, v) => msg(this.owner?.store(str(k), str(v))),
        load: (k) => msg(this.owner?.load(str(k))),
        yieldNow: () => void this.owner?.yieldNow(),
        setTimer: (id, ms) => msg(this.owner?.setTimer(num(id), num(ms))),
        clearTimer: (id) => void this.owner?.clearTimer(num(id)),
        tool: (name, input) => {
          const r = this.owner?.tool(str(name), str(input)) ?? "no cell owns this runtime";
          return typeof r === "string" ? ctx.newString(r) : r;
        },
      };
      for (const name of BRIDGE) {
        const f = ctx.newFunction(name, impl[name]);
        ctx.setProp(h, name, f);
        f.dispose();
      }
      const prelude = ctx.evalCode(PRELUDE_SOURCE, "relay_prelude.js");
      if (prelude.error) {
        const e = ctx.dump(prelude.error) as unknown;
        prelude.error.dispose();
        throw new Error(`could not set up the globals: ${JSON.stringify(e)}`);
      }
      const helpers = ctx.callFunction(prelude.value, ctx.undefined, h);
      prelude.value.dispose();
      if (helpers.error) {
        const e = ctx.dump(helpers.error) as unknown;
        helpers.error.dispose();
        throw new Error(`could not set up the globals: ${JSON.stringify(e)}`);
      }
      this.helpers = helpers.value;
    } finally {
      h.dispose();
    }
  }

  private callHelper(name: string, arg: (ctx: QuickJSContext) => QuickJSHandle): string | undefined {
    const ctx = this.ctx;
    const fn = ctx.getProp(this.helpers!, name);
    const a = arg(ctx);
    const r = ctx.callFunction(fn, this.helpers!, a);
    fn.dispose();
    a.dispose();
    if (r.error) {
      const e = ctx.dump(r.error) as unknown;
      r.error.dispose();
      return `could not set up the globals: ${JSON.stringify(e)}`;
    }
    r.value.dispose();
    return undefined;
  }
}

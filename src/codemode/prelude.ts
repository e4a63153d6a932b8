/**
 * JS evaluated once in every prepared context (src/codemode/vm.ts). It receives the host bridge
 * `h` (never exposed on globalThis), defines the model-facing globals and returns the helpers
 * the host calls back into: `setTools` when a cell adopts the context, `fire` for timers. A
 * bridge call that returns a string hit a limit: that message is thrown as a RangeError.
 */
export const EXIT_SENTINEL = "__relay_code_mode_exit__";

export function normalizeToolIdentifier(name: string): string {
  let id = name.replace(/[^A-Za-z0-9_$]/g, "_");
  if (id === "") id = "_";
  if (/^[0-9]/.test(id)) id = `_${id.slice(1)}`;
  return id;
}

export const PRELUDE_SOURCE = String.raw`(function (h) {
  "use strict";
  const g = globalThis;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const EXIT = ${JSON.stringify(EXIT_SENTINEL)};
  const check = (m) => {
    if (m !== undefined) throw new RangeError(m);
  };
  const render = (v) => {
    if (typeof v === "string") return v;
    try {
      const s = stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  };
  const def = (name, value) => defineProperty(g, name, { value, writable: false, enumerable: false, configurable: false });
  for (const k of ["console", "Atomics", "SharedArrayBuffer", "WebAssembly"]) {
    try { delete g[k]; } catch (e) {}
  }
  def("text", (v) => { check(h.text(render(v))); });
  def("notify", (v) => {
    const s = render(v);
    if (s.trim() === "") throw new TypeError("notify expects non-empty text");
    check(h.notify(s));
  });
  def("store", (key, value) => {
    const k = String(key);
    let s;
    try { s = stringify(value); } catch (e) { s = undefined; }
    if (s === undefined) throw new TypeError("Unable to store " + stringify(k) + ". Only plain serializable objects can be stored.");
    check(h.store(k, s));
  });
  def("load", (key) => {
    const s = h.load(String(key));
    return s === undefined ? undefined : parse(s);
  });
  def("yield_control", () => { h.yieldNow(); });
  def("exit", () => { throw EXIT; });
  const timers = new Map();
  let nextTimer = 0;
  def("setTimeout", (fn, ms) => {
    if (typeof fn !== "function") throw new TypeError("setTimeout expects a function callback");
    const delay = typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? ms : 0;
    const id = ++nextTimer;
    check(h.setTimer(id, delay));
    timers.set(id, fn);
    return id;
  });
  def("clearTimeout", (id) => {
    if (typeof id !== "number" || !(id > 0)) return;
    if (timers.delete(id)) h.clearTimer(id);
  });
  const tick = String.fromCharCode(96);
  const makeTool = (t) => (args) => {
    let input;
    if (t.kind === "freeform") {
      if (typeof args !== "string") return Promise.reject(new TypeError("tool " + tick + t.name + tick + " expects a string input"));
      input = stringify(args);
    } else {
      if (args === undefined) args = {};
      if (args === null || typeof args !== "object" || Array.isArray(args)) return Promise.reject(new TypeError("tool " + tick + t.name + tick + " expects a JSON object for arguments"));
      try { input = stringify(args); } catch (e) { return Promise.reject(new TypeError("tool " + tick + t.name + tick + " arguments are not JSON-serialisable")); }
    }
    const p = h.tool(t.name, input);
    if (typeof p === "string") return Promise.reject(new RangeError(p));
    return p.then((out) => (out === undefined ? undefined : parse(out)));
  };
  return {
    setTools(json) {
      const tools = {};
      const all = [];
      for (const t of parse(json)) {
        defineProperty(tools, t.id, { value: makeTool(t), enumerable: true });
        all.push(freeze({ name: t.id, description: t.description }));
      }
      def("tools", freeze(tools));
      def("ALL_TOOLS", freeze(all));
    },
    fire(id) {
      const fn = timers.get(id);
      if (!fn) return;
      timers.delete(id);
      fn();
    },
  };
})`;

/**
 * The JS source a prepared VM evaluates once, before any script (vm.ts): the tracker of
 * unhandled promise rejections, kept apart from the host functions because it is script text.
 */

import { TRACK_FN } from "./track-async.ts";

/**
 * Unhandled rejections, which this QuickJS build has no hook for. Every promise a script can
 * reach is of a Promise subclass that notes a rejection no handler has seen (`then`, which
 * `await`, `catch` and `Promise.all` call on a subclass, marks one seen): the global `Promise`
 * is that subclass (so `new Promise`, `Promise.reject` and every derived promise are), tool
 * calls return one, and track-async.ts rewrites `async` functions and `import()` to hand theirs
 * to `__relayTrack`. A script that replaces `then` makes the tracking unreliable, which
 * `report` says (fail closed). The completion value gives the host `wrap` (for tool functions)
 * and `report`; the script never sees either.
 */
export const TRACKER_SOURCE = `(() => {
  const Native = Promise, nativeReject = Promise.reject, nativeThen = Promise.prototype.then, unhandled = new Set(), seen = new WeakSet(), reasons = new WeakMap();
  const note = (p, e) => { if (!seen.has(p)) { unhandled.add(p); reasons.set(p, e); } };
  class TrackedPromise extends Native {
    constructor(executor) {
      let self, early = false, earlyReason, settled = false;
      super((resolve, reject) => {
        const fulfil = (v) => { settled = true; resolve(v); };
        const fail = (e) => { if (!settled) { settled = true; if (self) note(self, e); else { early = true; earlyReason = e; } } reject(e); };
        try { executor(fulfil, fail); } catch (e) { fail(e); }
      });
      self = this;
      if (early) note(self, earlyReason);
    }
    then(onFulfilled, onRejected) { seen.add(this); unhandled.delete(this); return super.then(onFulfilled, onRejected); }
    static [Symbol.hasInstance](v) { return v instanceof Native; }
  }
  const trackedThen = TrackedPromise.prototype.then;
  Object.defineProperty(TrackedPromise, "name", { value: "Promise" });
  Object.defineProperty(Native, "reject", { value: function reject(e) { return Reflect.apply(nativeReject, this === Native ? TrackedPromise : this, [e]); }, writable: true, configurable: true });
  const track = (p) => (p instanceof Native && Object.getPrototypeOf(p) !== TrackedPromise.prototype ? new TrackedPromise((resolve, reject) => Reflect.apply(nativeThen, p, [resolve, reject])) : p);
  Object.defineProperty(globalThis, "Promise", { value: TrackedPromise, writable: true, enumerable: false, configurable: true });
  Object.defineProperty(globalThis, "${TRACK_FN}", { value: track, writable: false, enumerable: false, configurable: false });
  const describe = (e) => {
    try { return e instanceof Error ? e.name + ": " + e.message : typeof e === "string" ? e : JSON.stringify(e) ?? String(e); }
    catch { return "(a value that cannot be described)"; }
  };
  return {
    wrap: (f) => function (...args) { return track(Reflect.apply(f, this, args)); },
    report: () => {
      if (Native.prototype.then !== nativeThen || TrackedPromise.prototype.then !== trackedThen) return ["the cell replaced Promise.prototype.then, so relay cannot tell which of its promise rejections were handled"];
      return [...unhandled].map((p) => describe(reasons.get(p)));
    },
  };
})()`;

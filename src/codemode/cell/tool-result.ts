/**
 * Hands a nested tool call's result to the script: the promise the script awaits resolves with
 * the tool's value, or rejects with the error message.
 */
import type { QuickJSDeferredPromise } from "quickjs-emscripten-core";
import type { Result } from "../../util/result.ts";
import type { PreparedVm } from "../vm.ts";

/**
 * The in-VM step that settles `deferred` with `r` (run it inside the cell's `enter`). A value
 * that cannot become a VM value (a cycle, nesting too deep for either JSON parser) rejects it
 * too: it is the call's failure, not the VM's, so it must not end up in `enter`'s catch (which
 * retires the runtime). The value is serialized now, outside the VM.
 */
export function settleStep(vm: PreparedVm, deferred: QuickJSDeferredPromise, r: Result<unknown>): () => undefined {
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
  return () => {
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
  };
}

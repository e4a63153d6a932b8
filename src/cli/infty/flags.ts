/**
 * Value parsers for `relay infty` flags. Each refuses a bad value at once (exit 2) with the
 * flag's name and what it accepts, so nothing invalid reaches a run or its run.json.
 */
import { parseRoleModelSpec, type RoleOverrides } from "../../config/role-spec.ts";
import { type DurationOptions, parseDuration } from "../../util/duration.ts";
import { ExitCode, fail } from "../usage.ts";

export { wholeNumber } from "../number-flag.ts";

/** A duration in ms: `90s`, `5m`, `2h`, `1d` (plain numbers in `o.defaultUnit`, if given). */
export const duration =
  (name: string, o: DurationOptions = {}) =>
  (v: string): number => {
    const r = parseDuration(v, name, o);
    if ("error" in r) fail(r.error.message, ExitCode.Usage);
    return r.ok;
  };

/** One role's `MODEL[,key=value...]`. */
export const roleModel =
  (flag: string) =>
  (v: string): RoleOverrides => {
    const r = parseRoleModelSpec(v, flag);
    if ("error" in r) fail(r.error.message, ExitCode.Usage);
    return r.ok;
  };

/** The same, repeatable: the values in the order given. */
export const roleModels =
  (flag: string) =>
  (v: string, prev: RoleOverrides[] = []): RoleOverrides[] => [...prev, roleModel(flag)(v)];

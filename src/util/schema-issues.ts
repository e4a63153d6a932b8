/**
 * A zod refusal as one line per problem: the dotted key path, what it must be, and what it was:
 * `max_turns must be at least 1 (got 0)`. Shared by config.toml and the JSON files relay keeps.
 */
import type { z } from "zod";

export interface SchemaIssue {
  /** Dotted key path, e.g. `shell.login` or `settings.roles.solver.model`. */
  key: string;
  message: string;
}

export interface DescribeOptions {
  /** What an object is called in the file's own terms (default "a table", as in TOML). */
  objectName?: string;
}

function valueAt(raw: unknown, keyPath: readonly PropertyKey[]): unknown {
  let cur: unknown = raw;
  for (const k of keyPath) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
}

function describeValue(v: unknown, objectName: string): string {
  if (v === undefined) return "nothing";
  if (Array.isArray(v)) return "an array";
  if (v instanceof Date) return "a date";
  if (v !== null && typeof v === "object") return objectName;
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

const TYPE_NAMES: Record<string, string> = {
  string: "a string",
  boolean: "true or false",
  number: "a number",
  int: "an integer",
  array: "an array",
};

function requirement(issue: z.core.$ZodIssue, objectName: string): string {
  switch (issue.code) {
    case "invalid_value":
      return `must be one of ${issue.values.map(String).join(", ")}`;
    case "invalid_type":
      return `must be ${issue.expected === "object" ? objectName : (TYPE_NAMES[issue.expected] ?? issue.expected)}`;
    case "too_small":
      return issue.origin === "string"
        ? "must not be empty"
        : `must be ${issue.inclusive ? "at least" : "greater than"} ${String(issue.minimum)}`;
    case "too_big":
      return `must be ${issue.inclusive ? "at most" : "less than"} ${String(issue.maximum)}`;
    default:
      return issue.message;
  }
}

export function describeIssues(
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  o: DescribeOptions = {},
): SchemaIssue[] {
  const objectName = o.objectName ?? "a table";
  return issues.map((issue) => {
    const key = issue.path.map(String).join(".") || "(top level)";
    return {
      key,
      message: `${key} ${requirement(issue, objectName)} (got ${describeValue(valueAt(raw, issue.path), objectName)})`,
    };
  });
}

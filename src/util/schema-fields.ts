/** Field schemas that several config formats share (config.toml's top level, [mcp_servers.*]). */
import { z } from "zod";
import { lazySchema } from "./lazy-schema.ts";
import { isHttpUrl } from "./predicates.ts";

/** An absolute http:// or https:// URL. */
export const httpUrl = lazySchema(() => z.string().refine(isHttpUrl, "must be an http:// or https:// URL"));

/** The name of an environment variable (never its value). */
export const envVarName = lazySchema(() =>
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"),
);

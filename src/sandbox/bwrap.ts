/**
 * The bubblewrap mechanism: the filesystem is mounted read-only, with writable binds only for
 * the allowed roots (their `.git` and `.relay` bound read-only again), a private pid namespace,
 * and a private network namespace unless network is allowed (so sockets are isolated rather
 * than refused: a command may bind a port that nothing outside can reach). Optional: used when asked for, or by `auto` where the
 * built-in sandbox cannot enforce the policy.
 */
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { PROTECTED_NAMES } from "../contracts/protected-names.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { entryAt } from "../util/paths.ts";
import { resolveProgram } from "../util/which.ts";
import { readOnlyInside } from "./linux/landlock-plan.ts";
import { socketsToHide } from "./linux/unix-sockets.ts";

export interface BwrapSupport {
  works: boolean;
  detail: string;
  program?: string;
}

let cached: BwrapSupport | undefined;

/** Checks once whether bubblewrap exists and can make a sandbox here (containers often forbid it). */
export function probeBwrap(): BwrapSupport {
  if (cached) return cached;
  if (/(^|,)\s*no-bwrap\s*(,|$)/.test(process.env.RELAY_SANDBOX_SIMULATE ?? "")) {
    return (cached = { works: false, detail: "bubblewrap is not installed (simulated by RELAY_SANDBOX_SIMULATE)" });
  }
  const found = resolveProgram("bwrap", process.env.PATH, "/");
  const bwrap = "ok" in found ? found.ok : undefined;
  if (!bwrap)
    return (cached = {
      works: false,
      detail: "bubblewrap (bwrap) is not installed (optional: apt-get install bubblewrap)",
    });
  const r = spawnSync(
    bwrap,
    ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "/bin/true"],
    { encoding: "utf8", timeout: 5000 },
  );
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim();
    return (cached = {
      works: false,
      detail: `bubblewrap at ${bwrap} cannot create a sandbox here: ${why} (user namespaces may be disabled)`,
    });
  }
  return (cached = { works: true, detail: `bubblewrap at ${bwrap}`, program: bwrap });
}

/** The argv that runs `argv` under `policy` with bubblewrap at `program`. */
export function bwrapArgv(program: string, argv: string[], policy: SandboxPolicy, cwd: string, tty: boolean): string[] {
  // A private pid namespace: a command cannot signal relay or anything else outside. Run by
  // root, bwrap keeps root's capabilities unless told (mknod of a disk's device node, say).
  const args = [
    program,
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--unshare-pid",
    "--proc",
    "/proc",
    "--die-with-parent",
  ];
  if (process.getuid?.() === 0) args.push("--cap-drop", "ALL");
  // bwrap applies mounts in order, so a later bind over a parent would undo an earlier
  // read-only bind below it: writable binds first (parents before children), protections last.
  if (policy.mode === "workspace-write") {
    const roots = new Set<string>(policy.tmp_writable === false ? [] : ["/tmp"]);
    for (const r of policy.writable_roots) if (existsSync(r)) roots.add(realpathSync(r));
    const sorted = [...roots].sort((a, b) => a.length - b.length);
    for (const root of sorted) args.push("--bind", root, root);
    for (const root of sorted) {
      for (const name of PROTECTED_NAMES) {
        const p = path.join(root, name);
        if (root !== "/tmp" && existsSync(p)) args.push("--ro-bind", p, p);
      }
    }
    for (const p of readOnlyInside(policy, sorted)) args.push("--ro-bind", p, p);
    if (!policy.network)
      args.push(
        "--unshare-net",
        ...hideArgs(
          sorted.filter((r) => r !== "/tmp"),
          roots.has("/tmp") ? ["/tmp"] : [],
        ),
      );
  } else {
    args.push("--unshare-net", ...hideArgs([], []));
  }
  // A new session stops TIOCSTI input injection into the caller's terminal, but would break
  // job control on a PTY, where the PTY already gives the child its own session.
  if (!tty) args.push("--new-session");
  args.push("--chdir", cwd, "--");
  return [...args, ...argv];
}

/**
 * A private network namespace does not cover named Unix sockets (a path reaches them from any
 * namespace): each one outside the writable places gets /dev/null over it (unix-sockets.ts).
 * A listed socket whose file is gone (its listener unlinked it) is left out: nothing there to
 * reach, and bwrap would fail making a mount point for it on a read-only tree.
 */
function hideArgs(roots: string[], temp: string[]): string[] {
  return (socketsToHide(roots, temp) ?? []).filter(entryAt).flatMap((p) => ["--ro-bind-try", "/dev/null", p]);
}

/**
 * Applies the sandbox attempt the orchestrator selected. On Linux this wraps the argv in
 * bubblewrap (bwrap): the filesystem is mounted read-only, with writable binds only for the
 * allowed roots and a private network namespace unless network is allowed. A requested
 * sandbox that cannot be applied is an error: the executor fails closed, never open.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, realpathSync } from "node:fs";
import path from "node:path";
import { err, ok, type Result } from "../util/result.ts";
import type { SandboxPolicy } from "./sandbox-policy.ts";

export interface SandboxSupport {
  available: boolean;
  mechanism: "bubblewrap" | "none";
  detail: string;
  /** Absolute path of the sandbox program (the child's PATH is the orchestrator's choice). */
  program?: string;
}

let cached: SandboxSupport | undefined;

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(path.delimiter)) {
    const p = path.join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** Checks once whether bubblewrap exists and works here (containers often forbid namespaces). */
export function probeSandbox(): SandboxSupport {
  if (cached) return cached;
  if (process.env.RELAY_SANDBOX_DISABLE === "1") {
    return (cached = { available: false, mechanism: "none", detail: "disabled by RELAY_SANDBOX_DISABLE=1" });
  }
  if (process.platform !== "linux") {
    return (cached = { available: false, mechanism: "none", detail: `no sandbox implementation for ${process.platform} yet` });
  }
  const bwrap = findOnPath("bwrap");
  if (!bwrap) {
    return (cached = { available: false, mechanism: "none", detail: "bubblewrap (bwrap) is not installed; install it with `apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap`" });
  }
  const r = spawnSync(bwrap, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--", "/bin/true"], {
    encoding: "utf8",
    timeout: 5000,
  });
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim();
    return (cached = { available: false, mechanism: "none", detail: `bubblewrap is installed at ${bwrap} but cannot create a sandbox here: ${why} (user namespaces may be disabled in this container)` });
  }
  return (cached = { available: true, mechanism: "bubblewrap", detail: `bubblewrap at ${bwrap}`, program: bwrap });
}

/** For tests: forget the cached probe. */
export function resetSandboxProbe(): void {
  cached = undefined;
}

/** Returns the argv to spawn for `argv` under `policy`, or why it cannot be sandboxed. */
export function sandboxArgv(argv: string[], policy: SandboxPolicy, cwd: string, tty: boolean): Result<string[]> {
  if (policy.mode === "danger-full-access") return ok(argv);
  const support = probeSandbox();
  if (!support.available) {
    return err(
      "sandbox_unavailable",
      `the ${policy.mode} sandbox cannot be applied on this host: ${support.detail}. The command was not run. ` +
        `Fix the sandbox, or run with --sandbox danger-full-access to run commands without one.`,
    );
  }
  const args = [support.program ?? "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"];
  // bwrap applies mounts in order, so a later bind over a parent would undo an earlier
  // read-only bind below it: writable binds first (parents before children), protections last.
  if (policy.mode === "workspace-write") {
    const roots = new Set<string>(policy.tmp_writable === false ? [] : ["/tmp"]);
    for (const r of policy.writable_roots) if (existsSync(r)) roots.add(realpathSync(r));
    const sorted = [...roots].sort((a, b) => a.length - b.length);
    for (const root of sorted) args.push("--bind", root, root);
    // A writable workspace still keeps its history read-only.
    for (const root of sorted) {
      const git = path.join(root, ".git");
      if (root !== "/tmp" && existsSync(git)) args.push("--ro-bind", git, git);
    }
    if (!policy.network) args.push("--unshare-net");
  } else {
    args.push("--unshare-net");
  }
  // A new session stops TIOCSTI input injection into the caller's terminal, but would break
  // job control on a PTY, where the PTY already gives the child its own session.
  if (!tty) args.push("--new-session");
  args.push("--chdir", cwd, "--");
  return ok([...args, ...argv]);
}

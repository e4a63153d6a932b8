/**
 * What goes first on PATH for every command the executor runs: a private directory holding
 * `relay`, which is this very executor's binary (so a command that calls `relay` gets this
 * version, not whatever else is installed), then the package's `relay-path/` (its bundled tools,
 * such as rg) when the executor runs from a package. A login shell (`shell.login`) may reset PATH
 * in its profile; then only the package's tools found there remain. The private directory's name
 * says who owns it (relay-path-owner.ts): the first one a process makes also removes those of
 * executors that died without removing theirs.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setImmediate } from "node:timers";
import { selfCommand } from "../protocol/child.ts";
import { Log } from "../util/log.ts";
import { MANIFEST_NAME, PATH_DIR } from "../util/package-layout.ts";
import { currentRuntime } from "../util/runtime.ts";
import { ownedDirPrefix, removeGoneOwnersDirs, selfOwner } from "./relay-path-owner.ts";

const log = Log.create("executor");

let dir: string | undefined;
let swept = false;

/**
 * Once per process, when it makes its own directory and so after its start-up: removes those
 * of executors that are gone (a SIGKILLed one leaves its own), off the command's path.
 */
function sweepGoneOwnersOnce(tmp: string): void {
  if (swept) return;
  swept = true;
  setImmediate(() => {
    void removeGoneOwnersDirs(tmp).then((gone) => {
      if (gone.length)
        log.info("removed the relay-path directories of gone executors", { count: gone.length, first: gone[0] });
      log.debug("relay-path sweep done", { removed: gone.length });
    });
  });
}

const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** Writes `relay` into `into`: a symlink to the compiled binary, else a script that re-execs relay. */
function writeSelf(into: string): boolean {
  const self = selfCommand();
  if ("error" in self) return false;
  const target = path.join(into, "relay");
  rmSync(target, { force: true });
  if (currentRuntime() === "bun-compiled" && self.ok.length === 1) symlinkSync(self.ok[0]!, target);
  else {
    writeFileSync(target, `#!/bin/sh\nexec ${self.ok.map(quote).join(" ")} "$@"\n`);
    chmodSync(target, 0o755);
  }
  return true;
}

/**
 * The private directory, made on first use and again if something removed it (a temp cleaner
 * during a run of several days); undefined where it cannot be made (then PATH is left alone).
 */
function selfDir(): string | undefined {
  if (process.platform === "win32") return undefined;
  if (dir && existsSync(path.join(dir, "relay"))) return dir;
  try {
    if (!dir || !existsSync(dir)) {
      dir = mkdtempSync(path.join(os.tmpdir(), ownedDirPrefix(selfOwner())));
      const made = dir;
      process.once("exit", () => rmSync(made, { recursive: true, force: true }));
      sweepGoneOwnersOnce(os.tmpdir());
    }
    return writeSelf(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

let toolsDir: { dir: string | undefined } | undefined;

/**
 * `relay-path/` of the package this binary was installed from (bin/<name> beside
 * relay-package.json); looked up once, not on every command.
 */
function packageToolsDir(): string | undefined {
  if (toolsDir) return toolsDir.dir;
  const root = path.dirname(path.dirname(process.execPath));
  const tools = path.join(root, PATH_DIR);
  const found = currentRuntime() === "bun-compiled" && existsSync(path.join(root, MANIFEST_NAME)) && existsSync(tools);
  toolsDir = { dir: found ? tools : undefined };
  return toolsDir.dir;
}

/** `pathValue` with relay's own directories in front (each once). */
export function withRelayFirst(pathValue: string | undefined): string {
  const first = [selfDir(), packageToolsDir()].filter((d): d is string => d !== undefined);
  const rest = (pathValue ?? "/usr/local/bin:/usr/bin:/bin")
    .split(path.delimiter)
    .filter((d) => d !== "" && !first.includes(d));
  return [...first, ...rest].join(path.delimiter);
}

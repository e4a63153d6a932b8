/** Where relay records: the relay home must be a writable directory, on a file system with room left. */
import { mkdir, stat, statfs, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { randomUUID } from "../util/random.ts";
import { errorMessage } from "../util/result.ts";
import { check, type DoctorCheck } from "./check.ts";

export async function homeCheck(home: string): Promise<DoctorCheck> {
  const name = "relay home";
  const fix = `set RELAY_HOME to a writable directory, or make ${home} one (mkdir -p / chmod u+w)`;
  let created = false;
  try {
    const s = await stat(home);
    if (!s.isDirectory()) return check(name, "missing", `${home} exists but is not a directory`, true, fix);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT")
      return check(name, "missing", `cannot inspect ${home}: ${errorMessage(e)}`, true, fix);
    try {
      await mkdir(home, { recursive: true });
      created = true;
    } catch (e2) {
      return check(name, "missing", `${home} does not exist and cannot be created: ${errorMessage(e2)}`, true, fix);
    }
  }
  const probe = path.join(home, `.doctor-${process.pid}-${randomUUID().slice(0, 8)}`);
  try {
    await writeFile(probe, "", { flag: "wx" });
    await unlink(probe);
  } catch (e) {
    return check(name, "missing", `${home} is not writable: ${errorMessage(e)}`, true, fix);
  }
  return check(
    name,
    "ok",
    created ? `${home} (it did not exist: created it now, as relay run would)` : `${home} (writable)`,
    true,
  );
}

/** Below these, sessions and runs may soon fail to record (a warning); at zero they cannot (missing). */
export const LOW_SPACE_BYTES = 256 * 1024 * 1024;
export const LOW_INODES = 10_000;

/** Free space and inodes on the home's file system: a full disk stops sessions mid-way. */
export async function diskCheck(home: string): Promise<DoctorCheck> {
  const name = "disk space";
  const fix = `free space on the file system holding ${home}, or set RELAY_HOME to a directory on another one`;
  let fs: Awaited<ReturnType<typeof statfs>>;
  try {
    fs = await statfs(home);
  } catch (e) {
    return check(name, "warn", `cannot read the free space of ${home}: ${errorMessage(e)}`, false);
  }
  const bytes = fs.bavail * fs.bsize;
  // A file system without inode counts (btrfs, some network ones) reports files = 0.
  const inodes = fs.files > 0 ? fs.ffree : undefined;
  const detail = `${formatFree(bytes)} and ${inodes === undefined ? "no inode count" : `${inodes} inodes`} free for ${home}`;
  if (bytes < 1024 * 1024 || inodes === 0) return check(name, "missing", detail, true, fix);
  if (bytes < LOW_SPACE_BYTES || (inodes !== undefined && inodes < LOW_INODES))
    return check(name, "warn", `${detail}: little left`, false, fix);
  return check(name, "ok", detail, false);
}

function formatFree(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${Math.floor(bytes / 1024)} KiB`;
}

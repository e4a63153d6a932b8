/**
 * Which saved session `relay run` starts from: `--resume <id>`, `--resume` alone (a picker on a
 * terminal; a usage error without one), or `--fork <id>`. Exits on bad usage.
 */
import { pickSession } from "./session-picker.ts";
import { ExitCode, fail } from "./usage.ts";

export interface RunSource {
  resume?: string;
  fork?: string;
  /** The session whose recorded settings carry over (the resumed or the forked one). */
  from?: string;
}

interface Terminal {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
}

export async function runSource(
  home: string,
  opts: { resume?: string | true; fork?: string },
  term: Terminal = process,
): Promise<RunSource> {
  if (opts.resume !== undefined && opts.fork !== undefined) {
    fail(
      "--resume and --fork cannot be combined: --resume continues a session in its own file, --fork starts a new session from it",
      ExitCode.Usage,
    );
  }
  // `--resume "fix it"`: the optional id took the prompt. Ids and prefixes have no spaces.
  if (typeof opts.resume === "string" && /\s/.test(opts.resume.trim())) {
    fail(
      `--resume took ${JSON.stringify(opts.resume)} for a session id, and ids have no spaces; to pick a session and give a prompt, put the prompt first: relay run ${JSON.stringify(opts.resume)} --resume (or: relay run --resume last ${JSON.stringify(opts.resume)})`,
      ExitCode.Usage,
    );
  }
  if (opts.resume !== true) return { resume: opts.resume, fork: opts.fork, from: opts.resume ?? opts.fork };
  if (!term.stdin.isTTY || !term.stderr.isTTY) {
    fail(
      '--resume without an id picks a session on a terminal, and there is none here: pass an id (or a unique prefix of at least 8 characters) or last, e.g. relay run --resume last "next request"; relay sessions list shows the ids',
      ExitCode.Usage,
    );
  }
  const r = await pickSession(home, term.stdin, term.stderr);
  if ("none" in r && r.none === "empty")
    fail('there are no sessions to resume yet; start one with relay run "..."', ExitCode.Usage);
  if ("none" in r) fail("no session picked", ExitCode.Interrupted);
  return { resume: r.picked.id, from: r.picked.id };
}

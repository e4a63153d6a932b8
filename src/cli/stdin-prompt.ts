/**
 * The prompt from stdin: `relay run -`, or no prompt argument with stdin not a terminal
 * (`echo "fix it" | relay run`, `relay run < task.md`), as other agent CLIs do.
 */
import { isatty } from "node:tty";
import { ExitCode, fail } from "./usage.ts";

/** More than this is not a prompt but a mistake (a binary or a log piped in). */
export const MAX_STDIN_PROMPT_BYTES = 4 * 1024 * 1024;

/** Say what relay is waiting for when stdin stays open and silent this long. */
const HINT_AFTER_MS = 2000;

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const hint = setTimeout(
    () =>
      process.stderr.write(
        "relay: reading the prompt from stdin (end it with Ctrl-D, or pass the prompt as an argument)\n",
      ),
    HINT_AFTER_MS,
  );
  try {
    for await (const chunk of stream) {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
      size += buf.length;
      if (size > MAX_STDIN_PROMPT_BYTES)
        fail(
          `the prompt on stdin is over ${MAX_STDIN_PROMPT_BYTES} bytes; put the material in a file and name it in the prompt`,
          ExitCode.Usage,
        );
      chunks.push(buf);
    }
  } finally {
    clearTimeout(hint);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The prompt to use: the argument, or stdin when asked for (`-`) or piped without one.
 * `process.stdin` is touched only to read it: under Bun, building it costs milliseconds of start-up.
 */
export async function resolvePrompt(
  arg: string | undefined,
  resuming: boolean,
  stdin?: NodeJS.ReadStream,
): Promise<string | undefined> {
  const explicit = arg === "-";
  const terminal = stdin ? Boolean(stdin.isTTY) : isatty(0);
  if (!explicit && (arg !== undefined || resuming || terminal)) return arg;
  if (explicit && terminal)
    fail(
      'relay run -: stdin is a terminal; pipe the prompt in (echo "..." | relay run -) or pass it as an argument',
      ExitCode.Usage,
    );
  const text = (await readAll(stdin ?? process.stdin)).trim();
  if (text) return text;
  if (explicit) fail("relay run -: stdin was empty; pipe the prompt in or pass it as an argument", ExitCode.Usage);
  return undefined;
}

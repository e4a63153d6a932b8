/**
 * main.ts starts `relay run`'s executor through protocol/early-spawn.ts, which parses nothing:
 * where it gives an argv, it must be the one protocol/child.ts's selfCommand gives, and where a
 * RELAY_SELF_COMMAND needs a shell's quoting undone, it starts nothing (the session spawns).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { selfCommand } from "../../src/protocol/child.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { selfArgv } from "../../src/protocol/early-spawn.ts";

const saved = process.env.RELAY_SELF_COMMAND;
afterEach(() => {
  if (saved === undefined) delete process.env.RELAY_SELF_COMMAND;
  else process.env.RELAY_SELF_COMMAND = saved;
});

function both(): { early: string[] | undefined; full: string[] } {
  const full = selfCommand();
  assert.ok("ok" in full, JSON.stringify(full));
  return { early: selfArgv("executor"), full: [...full.ok, "executor"] };
}

describe("the early spawn's argv", () => {
  test("a plain RELAY_SELF_COMMAND: the same words as selfCommand's", () => {
    for (const line of ["/usr/bin/bun /src/relay/src/main.ts", "relay", "/opt/x-1.2/bin/relay --flag=a,b"]) {
      process.env.RELAY_SELF_COMMAND = line;
      const { early, full } = both();
      assert.deepEqual(early, full, line);
    }
  });

  test("a RELAY_SELF_COMMAND with quoting, spaces in a word or shell characters: nothing early", () => {
    for (const words of [
      ["/with space/bun", "main.ts"],
      ["bun", "it's.ts"],
      ["bun", "$HOME/main.ts"],
    ]) {
      process.env.RELAY_SELF_COMMAND = joinCommandLine(words);
      assert.equal(selfArgv("executor"), undefined, process.env.RELAY_SELF_COMMAND);
      assert.deepEqual(both().full, [...words, "executor"], "selfCommand still reads it");
    }
  });

  test("no RELAY_SELF_COMMAND: this runtime's own command line, as selfCommand gives it", {
    skip: !process.versions.bun && "the early spawn is Bun's only",
  }, () => {
    delete process.env.RELAY_SELF_COMMAND;
    const { early, full } = both();
    assert.deepEqual(early, full);
  });
});

/** `relay run -` and piped prompts; `relay completion bash|zsh|fish` checked by a real bash. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { commandNodes } from "../../src/cli/completion.ts";
import { buildProgram } from "../../src/cli/program.ts";
import { findOnPath } from "../../src/util/which.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const relayWithStdin = (args: string[], stdin: string, env: NodeJS.ProcessEnv) => runRelayAsync(args, env, stdin);

describe("the prompt from stdin", () => {
  test("`relay run -` and a piped prompt without an argument both reach the model; an argument wins over stdin", async () => {
    await using h = await harness();
    const env = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1" };
    const args = [
      "run",
      "--base-url",
      h.server.baseUrl,
      "-m",
      "test-model",
      "--sandbox",
      "danger-full-access",
      "-C",
      h.workspace,
    ];
    h.server.enqueue(reply().text("one"), reply().text("two"), reply().text("three"));
    const dash = await relayWithStdin([...args, "-"], "STDIN-PROMPT-ONE\nsecond line\n", env);
    assert.equal(dash.status, 0, dash.stderr);
    const piped = await relayWithStdin(args, "STDIN-PROMPT-TWO", env);
    assert.equal(piped.status, 0, piped.stderr);
    const both = await relayWithStdin([...args, "ARGUMENT-PROMPT"], "NOT-READ", env);
    assert.equal(both.status, 0, both.stderr);
    const prompts = h.server.requests.map((r) =>
      JSON.stringify(
        inputOf(r.body)
          .filter((i) => i.role === "user")
          .at(-1),
      ),
    );
    assert.match(prompts[0]!, /STDIN-PROMPT-ONE\\nsecond line"/);
    assert.match(prompts[1]!, /STDIN-PROMPT-TWO/);
    assert.match(prompts[2]!, /ARGUMENT-PROMPT/);
    assert.ok(!prompts[2]!.includes("NOT-READ"));
  });

  test("an empty stdin is a usage error naming the fix, and nothing is written", async () => {
    await using h = await harness();
    const env = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1" };
    const dash = await relayWithStdin(["run", "--base-url", h.server.baseUrl, "-m", "m", "-"], "  \n", env);
    assert.equal(dash.status, 2);
    assert.match(dash.stderr, /relay run -: stdin was empty; pipe the prompt in or pass it as an argument/);
    const none = await relayWithStdin(["run", "--base-url", h.server.baseUrl, "-m", "m"], "", env);
    assert.equal(none.status, 2);
    assert.match(none.stderr, /a prompt is required/);
    assert.equal(h.server.requests.length, 0);
  });
});

/** COMPREPLY of the generated bash completion for the words typed so far (the last is the current one). */
function complete(script: string, words: string[]): string[] {
  const quoted = words.map((w) => `'${w}'`).join(" ");
  const r = spawnSync(
    "bash",
    [
      "--norc",
      "-c",
      `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _relay; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter(Boolean);
}

/**
 * What zsh or fish offers for the typed line: fish through `complete -C`; zsh by calling the
 * function with compadd and _files stood in for (they only exist inside the completion system).
 */
function completeIn(shell: "zsh" | "fish", bin: string, script: string, typed: string): string[] {
  const words = typed.split(" ");
  const code =
    shell === "fish"
      ? `${script}\ncomplete -C ${JSON.stringify(typed)} | string replace -r '\\t.*' ''`
      : `compdef() { :; }\ncompadd() { [[ $1 == -- ]] && shift; print -l -- "$@" | grep -- "^\${words[CURRENT]}"; }\n_files() { print FILES; }\n${script}\nwords=(${words.map((w) => `'${w}'`).join(" ")}); CURRENT=${words.length}; _relay`;
  const r = spawnSync(bin, ["-c", code], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter(Boolean);
}

describe("relay completion", () => {
  const generate = (shell: string) => {
    const [cmd, ...pre] = relayArgv();
    const r = spawnSync(cmd!, [...pre, "completion", shell], { cwd: REPO_ROOT, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };

  test("bash: subcommands, nested subcommands, flags, flag choices, and a flag's value is not taken for a subcommand", () => {
    const script = generate("bash");
    assert.ok(complete(script, ["relay", ""]).includes("infty"));
    assert.deepEqual(complete(script, ["relay", "infty", "re"]).sort(), ["requeue", "restore", "resume"]);
    assert.deepEqual(complete(script, ["relay", "memories", "consolidate", "--extr"]), [
      "--extractor",
      "--extract-script",
    ]);
    assert.deepEqual(complete(script, ["relay", "run", "--provider", "openai-"]).sort(), [
      "openai-chat",
      "openai-responses",
    ]);
    assert.deepEqual(complete(script, ["relay", "package", "build", "--variant", ""]).sort(), [
      "relay",
      "relay-executor",
    ]);
    // `-m run`: "run" is the model's name here, so the path stays `run` and its flags are offered.
    assert.ok(complete(script, ["relay", "run", "-m", "run", "--sandbox-b"]).includes("--sandbox-best-effort"));
    assert.ok(
      complete(script, ["relay", "run", "--script", "READ"]).includes("README.md"),
      "a free value completes file names",
    );
    assert.deepEqual(complete(script, ["relay", "completion", "--he"]), ["--help"]);
  });

  test("zsh and fish scripts name every subcommand and flag of the tree; each parses when the shell is here", async () => {
    const nodes = commandNodes((await buildProgram()) as never);
    assert.ok(nodes.length > 15, `${nodes.length} commands`);
    for (const shell of ["zsh", "fish"] as const) {
      const script = generate(shell);
      for (const n of nodes) {
        for (const s of n.subcommands) assert.ok(script.includes(s.name), `${shell}: ${n.path} ${s.name}`);
        for (const f of n.flags)
          assert.ok(
            script.includes(shell === "fish" && f.long ? `-l ${f.long.slice(2)}` : (f.long ?? f.short!)),
            `${shell}: ${n.path} ${f.long}`,
          );
      }
      const bin = findOnPath(shell, process.env.PATH);
      // The content checks above ran; only the parse check needs the shell.
      if (skipBecause(`${shell} -n of the completion script`, bin ? false : `${shell} is not installed`)) continue;
      const r = spawnSync(bin!, ["-n"], { input: script, encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      const offered = (typed: string) => completeIn(shell, bin!, script, typed);
      assert.deepEqual(offered("relay infty re").sort(), ["requeue", "restore", "resume"]);
      assert.deepEqual(offered("relay run --provider openai-").sort(), ["openai-chat", "openai-responses"]);
      assert.ok(offered("relay run -m run --sandbox-b").includes("--sandbox-best-effort"));
    }
  });

  test("an unknown shell is a usage error listing the choices", () => {
    const [cmd, ...pre] = relayArgv();
    const r = spawnSync(cmd!, [...pre, "completion", "powershell"], { cwd: REPO_ROOT, encoding: "utf8" });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /Allowed choices are bash, zsh, fish/);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadBashGrammar } from "../../src/util/bash-grammar.ts";
import { type Script, ShellParseError, type Word } from "../../src/util/shell-ast.ts";
import { parseShell } from "../../src/util/shell-parse.ts";
import { parseShellTree } from "../../src/util/shell-tree.ts";
import { prng } from "../support/prng.ts";

const parser = await loadBashGrammar();
const parse = (src: string): Script => parseShellTree(parser, src);

/** Every simple command's words, and every redirection, wherever the parser attached it. */
function reading(script: Script, out: { commands: unknown[]; redirects: string[] } = { commands: [], redirects: [] }) {
  const word = (w: Word): unknown => {
    for (const s of w.scripts) reading(s, out);
    return [w.value, w.fixed, w.mayBeOption];
  };
  for (const c of script.commands) {
    for (const r of c.redirects) {
      out.redirects.push(JSON.stringify([r.op, word(r.target)]));
      for (const s of r.heredocScripts ?? []) reading(s, out);
    }
    if (c.type === "simple") out.commands.push([c.assigns.map((a) => [a.name, word(a.word)]), c.words.map(word)]);
    else {
      if (c.type === "for") out.commands.push(["for", c.name, c.items.map(word)]);
      if (c.type === "group") (c.words ?? []).forEach(word);
      reading(c.body, out);
    }
  }
  out.redirects.sort();
  return out;
}

/** The program of every simple command, in the order bash meets them (a command's substitutions after it). */
function programs(src: string): string[] {
  const out: string[] = [];
  const words = (ws: readonly Word[]) => ws.forEach((w) => w.scripts.forEach(walk));
  const walk = (script: Script): void => {
    for (const c of script.commands) {
      if (c.type === "simple") {
        out.push(c.words[0]?.value ?? "");
        words([...c.assigns.map((a) => a.word), ...c.words]);
      } else {
        words(c.type === "for" ? c.items : (c.words ?? []));
        walk(c.body);
      }
      c.redirects.forEach((r) => (r.heredocScripts ?? []).forEach(walk));
    }
  };
  walk(parse(src));
  return out;
}

describe("shell commands read with the bash grammar", () => {
  test("loads once: the same parser on every call", async () => {
    assert.equal(await loadBashGrammar(), parser);
  });

  test("sees through quotes: single quotes keep $( ) literal, double quotes and backticks do not", () => {
    const [lit] = parse("echo '$(rm x)'").commands;
    assert.ok(lit?.type === "simple");
    assert.deepEqual([lit.words[1]?.value, lit.words[1]?.scripts.length], ["$(rm x)", 0]);
    assert.deepEqual(programs('echo "a $(rm x)" `pwd` "b`id`"'), ["echo", "rm", "pwd", "id"]);
    // bash unescapes a backtick body before it parses it: the inner substitution runs too.
    assert.deepEqual(programs("echo `echo \\`rm x\\``"), ["echo", "echo", "rm"]);
  });

  test("finds every command of lists, pipelines, groups, loops, case, functions and here-document tails", () => {
    assert.deepEqual(programs("a | b && c || d; e & f\ng"), ["a", "b", "c", "d", "e", "f", "g"]);
    assert.deepEqual(programs("( a; b ) | { c; }"), ["a", "b", "c"]);
    assert.deepEqual(
      programs("for x in 1 2; do a; b; done; while c; do d; done; if e; then f; elif g; then h; else i; fi"),
      ["a", "b", "c", "d", "e", "f", "g", "h", "i"],
    );
    assert.deepEqual(programs("case $(a) in x) b;; y|z) c;; esac"), ["a", "b", "c"]);
    assert.deepEqual(programs("f() { a; }; function g { b; }"), ["a", "b"]);
    assert.deepEqual(programs("cat <<EOF | a && b\nbody $(c)\nEOF\n"), ["cat", "c", "a", "b"]);
    assert.deepEqual(programs("[[ -n $(a) ]] && [ -f x ]"), ["[[", "a", "["]);
    assert.deepEqual(programs("! ! rm x"), ["rm"], "bash negates twice; the grammar took the second ! for a command");
  });

  test("reads redirections with their descriptors and here-doc bodies", () => {
    const [c] = parse("cat 2>&1 >/dev/null <<E\nbody $(pwd)\nE\n").commands;
    assert.ok(c?.type === "simple");
    assert.deepEqual(
      c.redirects.map((r) => [r.fd, r.op, r.target.value]),
      [
        [2, ">&", "1"],
        [undefined, ">", "/dev/null"],
        [undefined, "<<", "E"],
      ],
    );
    assert.equal(c.redirects[2]?.heredocScripts?.length, 1);
    const [quoted] = parse("cat <<'E'\n$(rm x)\nE\n").commands;
    assert.deepEqual(quoted?.redirects[0]?.heredocScripts, [], "a quoted delimiter: the body is text");
    const [closed] = parse("ls >&-").commands;
    assert.deepEqual(
      closed?.redirects.map((r) => [r.op, r.target.value]),
      [[">&", "-"]],
    );
  });

  test("marks words whose value is computed, and whether they may be options", () => {
    const [c] = parse('x "$a" ./$b "./$c" -$d *.ts src/*.ts $\'-o\' {-o,x} stash@{0} ~').commands;
    assert.ok(c?.type === "simple");
    assert.deepEqual(
      c.words.slice(1).map((w) => [w.fixed, w.mayBeOption]),
      [
        [false, true],
        [false, true],
        [false, false],
        [false, true],
        [false, true],
        [false, false],
        [true, true],
        [false, true],
        [true, false],
        [true, false],
      ],
    );
    assert.deepEqual(
      c.words.slice(1, 3).map((w) => w.splits),
      [false, true],
    );
  });

  test("refuses what bash would read differently, or what it cannot read, naming it", () => {
    const refusals: Array<[string, RegExp]> = [
      ['echo "unterminated', /unterminated "/],
      ["ls &&", /a word is missing/],
      ["a=(1 2)", /arrays/],
      ["echo ${a/b/c}", /parameter expansion is not analysed/],
      ["echo $((x + 1))", /arithmetic on variable names/],
      ["(( x = 1 ))", /arithmetic on variable names/],
      ["for ((i=0;i<3;i++)); do :; done", /arithmetic for/],
      ["cat <<EOF\n`rm x`\nEOF", /a backtick in a here-document/],
      ["--x=y ls", /--x is not a variable name bash assigns/],
      ["find . { { -delete", /read across a blank/],
      ['echo $"hi"', /token "\$"/],
      [`${"$(".repeat(20)}ls${")".repeat(20)}`, /nested too deeply/],
    ];
    for (const [src, why] of refusals)
      assert.throws(
        () => parse(src),
        (e: unknown) => e instanceof ShellParseError && why.test(e.message),
        src,
      );
  });

  test("agrees with the hand-written parser wherever both read a command (a seeded differential)", () => {
    const random = prng(20261205);
    const atoms = [
      "ls",
      "cat",
      "-la",
      "x",
      "'a b'",
      '"q $x"',
      '"$(pwd)"',
      "$(ls -1)",
      "`pwd`",
      "$y",
      "${HOME}",
      "*.ts",
      "a{b,c}",
      "\\$z",
      "$'\\x2d'",
      "2>&1",
      ">/dev/null",
      "<in",
      ">>out",
      "|",
      "&&",
      "||",
      ";",
      "&",
      "\n",
      "=",
      "f=1",
      "-o",
      "--x=y",
      '"a\\"b"',
      "'$(rm)'",
      "[",
      "]",
      "{",
      "}",
      "(",
      ")",
      "<(ls)",
      "#c",
      "~",
      "a\\ b",
      "<<<w",
      "!",
    ];
    let both = 0;
    for (let i = 0; i < 4000; i++) {
      const src = Array.from(
        { length: 1 + Math.floor(random() * 7) },
        () => atoms[Math.floor(random() * atoms.length)],
      ).join(" ");
      let tree: Script | undefined;
      try {
        tree = parse(src);
      } catch (e) {
        assert.ok(e instanceof ShellParseError, `${JSON.stringify(src)}: ${String(e)}`);
      }
      let hand: Script | undefined;
      try {
        hand = parseShell(src);
      } catch {
        hand = undefined;
      }
      if (!tree || !hand) continue;
      both++;
      assert.deepEqual(reading(tree), reading(hand), JSON.stringify(src));
    }
    assert.ok(both > 1500, `only ${both} commands were read by both`);
  });
});

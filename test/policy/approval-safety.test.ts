import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { evaluateExec, isKnownSafe, terminalApprover } from "../../src/policy/approval.ts";
import { commandSafety } from "../../src/policy/command-safety.ts";
import { loadBashGrammar } from "../../src/util/bash-grammar.ts";
import { parseShell, ShellParseError } from "../../src/util/shell-parse.ts";

// command-safety.ts reads commands with the bash grammar, loaded once per process.
await loadBashGrammar();

/** Commands `untrusted` runs without asking. */
const SAFE: readonly string[] = [
  "ls -la",
  "git status",
  "cat a | grep b",
  "rg foo src && wc -l x",
  "echo '$(rm -rf /)'",
  'echo "\\$(rm x)"',
  "echo \\$\\(rm x\\)",
  'echo "$(ls)"',
  "echo `pwd`",
  "cat $(which sh)",
  "ls > /dev/null 2>&1",
  "ls 2>/dev/null",
  "ls &>/dev/null",
  "cat f > /dev/stderr",
  "grep -r foo . 2>&1 | head -20",
  "cat < in.txt",
  "wc -l <<< 'a b'",
  "cat <<'EOF'\n$(rm x)\nEOF",
  "cat <<EOF\nhello $(pwd)\nEOF",
  "cat <<-EOF\n\tx\n\tEOF\nls",
  'bash -c "ls | wc -l"',
  "sh -c 'git status && git log -1'",
  "bash -lc 'cat README.md'",
  "bash -o pipefail -c 'ls | head'",
  "env LC_ALL=C ls",
  "env foo=1 ls",
  "env -i LANG=C sort f",
  "LC_ALL=C sort f",
  'f=src/a.ts; cat "$f"',
  "GIT_PAGER=cat git log",
  "xargs grep foo",
  "find . -name '*.ts' | xargs grep -n foo",
  "find . -name '*.ts' -print0 | xargs -0 wc -l",
  "xargs",
  "nice -n 5 grep x f",
  "nice -10 cat f",
  "timeout 10 rg foo",
  "timeout -s KILL 5s ls",
  "stdbuf -oL grep x f",
  "command -v git",
  "command ls",
  "time ls",
  "( cd src && ls ) | sort",
  "{ ls; pwd; } 2>/dev/null",
  'for f in *.ts; do wc -l "$f"; done',
  "if test -f x; then cat x; else echo no; fi",
  'while read -r l; do echo "$l"; done < f',
  "! grep -q x f",
  "[ -f x ] && cat x",
  "[[ -n x ]] && echo yes",
  "set -euo pipefail; ls",
  "cd .. && ls",
  "ls # rm -rf /",
  "git branch",
  "git branch -a -v",
  "git branch --list 'feat*'",
  "git branch --show-current",
  "git tag",
  "git tag -l 'v1.*'",
  "git config user.name",
  "git config --get user.email",
  "git config --list",
  "git stash list",
  "git stash show -p stash@{0}",
  "git log --oneline -n 5 | cat",
  "git log --format=%H -1",
  "git show HEAD:README.md | head",
  "git diff --stat HEAD~1",
  "git diff -- src/a.ts",
  "git -C sub status",
  "git --no-pager log -3",
  "git rev-parse --show-toplevel",
  "git ls-files | wc -l",
  "git blame -L 1,10 README.md",
  "git grep -n TODO",
  "git remote -v",
  "git worktree list",
  "git",
  "sed -n 1,20p f",
  "sed -n '/foo/,/bar/p' f",
  "sed -e 's/a/b/g' -e '3q' f",
  "sed -E 's#/x#/y#2' f",
  "sed 's/a/b/; s/c/d/' f",
  "sort -k2 -t, f",
  "sort -rn f | uniq -c",
  "sort src/*.txt",
  "uniq f",
  "dd if=/dev/zero bs=1 count=1",
  "date +%s",
  "printf '%s\\n' \"$x\"",
  "read -r line < f",
  "diff <(ls a) <(ls b)",
  "echo ${HOME}",
  "/bin/ls -la",
  "/usr/bin/git status",
  "eval 'ls; pwd'",
  "x=$(ls); echo $x",
  "echo $'\\x2d'",
  "tree -L 2",
  "file -b README.md",
  "rg -n --glob '*.ts' foo",
  "jq .name package.json",
  "head -c 100 f | od -c",
  "ls\npwd\n",
  // The bash grammar reads these constructs; the hand parser used to refuse them.
  "echo $((1+2))",
  "case x in a) ls;; esac",
  'case "$1" in -h|--help) echo usage;; *) cat "$1";; esac',
  "f() { ls; }",
  "select x in a b; do echo $x; done",
  '[ "$a" = "$b" ] && echo same',
  '[ -n "$x" ] && [ -f "$x" ]',
  "[[ 3 -gt 2 ]]",
  "[[ -v HOME ]]",
  "ls 2>/dev/null -la",
  "echo a{b,c} ~/x",
  "ls >&-",
];

/** Commands that ask, with what the reason must say. */
const ASK: ReadonlyArray<readonly [string, RegExp]> = [
  ["git branch -D x", /git branch -D changes branches/],
  ["git branch --delete x", /changes branches/],
  ["git branch -m old new", /changes branches/],
  ["git branch newfeature", /git branch newfeature changes branches/],
  ["git tag v1", /git tag v1 changes tags/],
  ["git tag -d v1", /changes tags/],
  ["sort -o FILE in", /sort -o writes a file/],
  ["sort -s -o x in", /sort -o writes a file/],
  ["sort -rno out in", /sort -o writes a file/],
  ["sort --output=x in", /sort --output writes a file/],
  ["sort --out=x in", /sort --output writes a file/],
  ["sort --compress-program=gzip f", /runs another program/],
  ["find . -fprint FILE", /find -fprint writes a file/],
  ["find . -fprint0 FILE", /writes a file/],
  ["find . -fprintf FILE %p", /writes a file/],
  ["find . -fls FILE", /writes a file/],
  ["find . -delete", /find -delete deletes files/],
  ["find . -name x -exec rm {} \\;", /find -exec runs another program/],
  ["find . -execdir cat {} +", /runs another program/],
  ["find . -ok rm {} \\;", /runs another program/],
  ["find . -okdir rm {} \\;", /runs another program/],
  ["git diff --output=FILE", /git diff --output writes a file/],
  ["git log --output FILE", /writes a file/],
  ["git diff --ext-diff", /git diff --ext-diff runs the external diff program .*diff\.external/],
  ["git log -p --textconv", /git log --textconv runs the textconv programs/],
  ["git show --textconv HEAD:a.pdf", /textconv/],
  ["git blame --textconv a.pdf", /textconv/],
  ["git cat-file --textconv HEAD:a.pdf", /textconv/],
  ["git grep --textconv x", /textconv/],
  ["git -c core.pager=evil log", /git -c can set options that run programs/],
  ["git ls-remote --upload-pack=evil origin", /git ls-remote may change/],
  ["git show --outp=x", /writes a file/],
  ["sed --in-place s/a/b/ f", /sed --in-place edits files in place/],
  ["sed -i s/a/b/ f", /sed -i edits files in place/],
  ["sed -ni p f", /sed -i edits files in place/],
  ["sed -i.bak s/a/b/ f", /sed -i edits files in place/],
  ["sed 's/a/b/w out' f", /s\/\/\/w writes a file/],
  ["sed -e 's/x/y/e' f", /s\/\/\/e runs a command/],
  ["sed '1e rm x' f", /e runs a command/],
  ["sed -n '/x/w out' f", /w writes a file/],
  ["sed -f script.sed f", /reads a script/],
  ['echo "$(rm x)"', /in the substitution in "\$\(rm x\)": rm is not on the read-only list/],
  ["echo `rm x`", /rm is not on the read-only list/],
  ["cat $(ls $(rm x))", /rm is not on the read-only list/],
  ["cat <<EOF\n$(rm x)\nEOF", /in the here-document: rm is not on the read-only list/],
  ["diff <(rm a) b", /rm is not on the read-only list/],
  ["echo x > f", /the redirection > f writes a file/],
  ["echo x >> log", /the redirection >> log writes a file/],
  ["echo x >| f", /writes a file/],
  ["ls &> out", /the redirection &> out writes a file/],
  ["ls 2> err.log", /writes a file/],
  ["ls >&out", /writes a file/],
  ["cat <> f", /could not analyse/],
  ["{ ls; } > out", /writes a file/],
  ['ls > "$f"', /writes a file/],
  [">out", /writes a file/],
  ["bash -lc 'rm -rf x'", /in bash -c: rm is not on the read-only list/],
  ["sh -c 'ls > out'", /in sh -c: the redirection > out writes a file/],
  ["bash script.sh", /bash without -c runs a script/],
  ['bash -c "$cmd"', /computed/],
  ["eval rm x", /in eval: rm is not on the read-only list/],
  ['eval "$x"', /computed/],
  ["env PATH=/tmp ls", /setting PATH/],
  ["env FOO=1 ls", /setting FOO can change what a command runs/],
  ["PATH=. ls", /setting PATH/],
  ["LD_PRELOAD=x.so cat f", /setting LD_PRELOAD/],
  ["GIT_PAGER=less git log", /setting GIT_PAGER/],
  ["GIT_EXTERNAL_DIFF=rm git diff", /setting GIT_EXTERNAL_DIFF/],
  ["env -S 'rm x'", /env -S is not understood/],
  ["sudo ls", /sudo runs the command as another user/],
  ["find . | xargs rm", /rm is not on the read-only list/],
  ["xargs sort", /xargs adds arguments to sort/],
  ["xargs -I{} sh -c 'cat {}'", /xargs adds arguments to sh/],
  ["xargs env", /xargs would run a command made from its input/],
  ["xargs --process-slot-var=X ls", /is not understood/],
  ["timeout 10 rm x", /rm is not on the read-only list/],
  ["nice rm x", /rm is not on the read-only list/],
  ["command rm x", /rm is not on the read-only list/],
  ["time -o out ls", /time -o is not understood/],
  ["tee out", /tee writes its input to files/],
  ["cat x | tee y", /tee writes/],
  ["dd if=a of=b", /dd of= writes a file/],
  ["rg --pre cat foo", /rg --pre runs another program/],
  ["rg -z foo", /rg -z runs decompression programs/],
  ["uniq a b", /uniq writes its output to b/],
  ['sort "$x"', /cannot check the computed argument "\$x" of sort/],
  ["sort $x f", /computed argument/],
  ["sort *.txt", /computed argument/],
  ["sort {-o,x} f", /computed argument/],
  ['find "$d" -name x', /computed argument/],
  ["printf -v PATH x", /printf -v sets a shell variable/],
  ["read PATH", /setting PATH/],
  ["for PATH in /tmp; do ls; done", /setting PATH/],
  ["git -c core.pager=rm log", /git -c can set options that run programs/],
  ["git config user.name bob", /changes the configuration/],
  ["git config --unset user.name", /changes the configuration/],
  ["git stash", /git stash without a subcommand/],
  ["git stash pop", /may change the repository/],
  ["git checkout main", /git checkout may change the repository/],
  ["git reset --hard", /git reset may change the repository/],
  ["git push", /git push may change the repository/],
  ["git grep -O foo", /runs a pager program/],
  ["git remote add x y", /may change the repository/],
  ["git $sub", /computed/],
  ["tree -o out", /tree -o writes a file/],
  ["file -C -m x", /file -C writes a file/],
  ["date -s now", /date -s sets the clock/],
  ["date 0101", /sets the clock/],
  ["rm -rf x", /rm is not on the read-only list/],
  ["npm test", /npm is not on the read-only list/],
  ["make", /make is not on the read-only list/],
  ["awk '{print}' f", /awk is not on the read-only list/],
  ["nohup ls", /nohup writes nohup.out/],
  ["echo hi; rm x", /rm is not/],
  ["ls && rm x", /rm is not/],
  ["ls || rm x", /rm is not/],
  ["ls | rm x", /rm is not/],
  ["ls & rm x", /rm is not/],
  ["$(echo rm) x", /the command name \$\(echo rm\) is computed at run time/],
  ["$cmd", /computed at run time/],
  ["./ls", /\.\/ls runs a program by its path/],
  ["/tmp/ls", /runs a program by its path/],
  ["echo $((x))", /could not analyse.*arithmetic on variable names/],
  ["echo $((a[$(rm x)]))", /could not analyse.*arithmetic/],
  ["(( x = 1 ))", /could not analyse/],
  ["for ((i=0;i<3;i++)); do ls; done", /could not analyse.*arithmetic for/],
  ["case x in a) rm y;; esac", /rm is not on the read-only list/],
  ["case $(rm x) in a) ;; esac", /in the substitution in \$\(rm x\): rm is not/],
  ["f() { rm x; }", /rm is not on the read-only list/],
  ["f() { ls; } > out", /the redirection > out writes a file/],
  ["select x in a; do rm $x; done", /rm is not on the read-only list/],
  ["coproc rm x", /coproc is not on the read-only list/],
  // Arithmetic evaluates a variable's value as an expression: `a[$(cmd)]` there runs cmd.
  ["x='a[$(rm -rf ~)]'; [[ $x -eq 0 ]]", /\[\[ -eq \]\] evaluates \$x as arithmetic/],
  ["[[ -v $x ]]", /evaluates an array subscript/],
  ["[ -v 'a[$(rm x)]' ]", /test -v 'a\[\$\(rm x\)\]' evaluates an array subscript/],
  ['test -v "$x"', /evaluates an array subscript/],
  ["[ -z $x ]", /cannot count the arguments of test: \$x may split/],
  ['test "$a" "$b" "$c" "$d" "$e"', /cannot tell whether "\$a" is an operator of test/],
  // Where the grammar reads less than bash, relay does not guess.
  ["cat <<EOF\n`rm x`\nEOF", /could not analyse.*backtick in a here-document/],
  ["cat <<EOF | rm x\nhi\nEOF", /rm is not on the read-only list/],
  ["cat <<EOF && rm x\nhi\nEOF", /rm is not on the read-only list/],
  ["cat <<EOF\nEOF \nrm x\nEOF", /rm is not on the read-only list/],
  ["echo `echo \\`rm x\\``", /in the substitution in `rm x`: rm is not/],
  ["[[ x =~ $(rm y) ]]", /rm is not on the read-only list/],
  ['echo "a`rm y`b"', /rm is not on the read-only list/],
  ["x=`rm y`", /rm is not on the read-only list/],
  ["export FOO=$(rm x)", /rm is not on the read-only list/],
  ["cat <(ls) >(rm x)", /in the substitution in >\(rm x\): rm is not/],
  ["echo ${x:-$(rm y)}", /could not analyse.*parameter expansion/],
  ["echo ${x@P}", /could not analyse/],
  ['echo "unterminated', /could not analyse.*unterminated/],
  ["echo 'unterminated", /could not analyse/],
  ["ls &&", /could not analyse/],
  ["|| ls", /could not analyse/],
  ["a=(1 2)", /could not analyse/],
  ["ls @(a|b)", /could not analyse/],
  ["echo $=x", /could not analyse/],
  ["", /empty/],
  ["   ", /empty/],
  ["source ./env.sh", /source runs a script file/],
  ["exec >out", /writes a file/],
];

describe("untrusted approval: which commands only read", () => {
  test("the table has at least 100 commands each way it decides", () => {
    assert.ok(SAFE.length + ASK.length >= 200, `${SAFE.length} safe + ${ASK.length} asking`);
  });

  for (const cmd of SAFE) {
    test(`runs without asking: ${JSON.stringify(cmd)}`, async () => {
      assert.deepEqual(commandSafety(cmd), { safe: true });
      assert.equal(await isKnownSafe(cmd), true);
    });
  }

  for (const [cmd, why] of ASK) {
    test(`asks: ${JSON.stringify(cmd)}`, async () => {
      const v = commandSafety(cmd);
      assert.equal(v.safe, false, `${cmd} should ask`);
      if (!v.safe) assert.match(v.reason, why);
      assert.equal(await isKnownSafe(cmd), false);
    });
  }
});

describe("the decision reaches the prompt", () => {
  test("evaluateExec carries the reason; other policies and safe commands skip", async () => {
    const need = await evaluateExec("untrusted", "sort -o out in", "/w", false, "tidy");
    assert.equal(need.type, "ask");
    if (need.type === "ask") {
      assert.equal(need.request.reason, "sort -o writes a file");
      assert.equal(need.request.justification, "tidy");
    }
    assert.deepEqual(await evaluateExec("untrusted", "sort in", "/w", false), { type: "skip" });
    assert.deepEqual(await evaluateExec("on-request", "sort -o out in", "/w", false), { type: "skip" });
  });

  test("the terminal prompt says why it asks", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (d: Buffer) => (shown += d.toString()));
    const answer = terminalApprover(input, output).ask({
      kind: "exec",
      summary: "git branch -D x",
      reason: "git branch -D changes branches",
      cwd: "/w",
    });
    input.write("n\n");
    assert.equal(await answer, "denied");
    assert.match(shown, /git branch -D x\nasking because git branch -D changes branches\napprove\?/);
  });
});

describe("the shell parser", () => {
  test("sees through quotes: single quotes keep $( ) literal, double quotes do not", () => {
    const [lit] = parseShell("echo '$(rm x)'").commands;
    assert.equal(lit?.type === "simple" && lit.words[1]?.value, "$(rm x)");
    assert.equal(lit?.type === "simple" && lit.words[1]?.scripts.length, 0);
    const [sub] = parseShell('echo "a $(rm x)"').commands;
    assert.equal(sub?.type === "simple" && sub.words[1]?.scripts.length, 1);
  });

  test("finds every command of lists, pipelines, groups and loops", () => {
    const names = (src: string): string[] =>
      parseShell(src).commands.flatMap((c) =>
        c.type === "simple"
          ? [c.words[0]?.value ?? ""]
          : c.body.commands.map((d) => (d.type === "simple" ? (d.words[0]?.value ?? "") : "?")),
      );
    assert.deepEqual(names("a | b && c || d; e & f\ng"), ["a", "b", "c", "d", "e", "f", "g"]);
    assert.deepEqual(names("( a; b ) | { c; }"), ["a", "b", "c"]);
    assert.deepEqual(names("for x in 1 2; do a; b; done"), ["a", "b"]);
  });

  test("reads redirections with their descriptors and here-doc bodies", () => {
    const [c] = parseShell("cat 2>&1 >/dev/null <<E\nbody $(pwd)\nE\n").commands;
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
  });

  test("marks words whose value is computed, and whether they may be options", () => {
    const [c] = parseShell('x "$a" ./$b "./$c" -$d *.ts src/*.ts $\'-o\'').commands;
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
      ],
    );
  });

  test("refuses what it does not model instead of guessing", () => {
    for (const src of [
      "echo $((1))",
      "case a in a) ;; esac",
      "f() { :; }",
      "echo ${a/b/c}",
      "select x in a; do :; done",
      "echo $[1]",
    ]) {
      assert.throws(() => parseShell(src), ShellParseError, src);
    }
  });
});

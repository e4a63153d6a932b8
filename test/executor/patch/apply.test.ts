import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { describe, test } from "node:test";
import type { SandboxPolicy } from "../../../src/contracts/sandbox-policy.ts";
import { fileTools } from "../../../src/executor/file-tools.ts";
import { applyChunks, seekSequence } from "../../../src/executor/patch/apply.ts";
import { applyPatchTool } from "../../../src/executor/patch/tool.ts";
import { toolJsonSchema } from "../../../src/executor/tool-schemas.ts";
import { errOf, makeCtx, okText, run, withTmp, write } from "../files/support.ts";

const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");
const read = (f: string) => fs.readFileSync(f, "utf8");
const ws = (...roots: string[]): SandboxPolicy => ({ mode: "workspace-write", writable_roots: roots, network: false });

async function apply(dir: string, text: string, sandbox?: SandboxPolicy) {
  return run(applyPatchTool, { input: text }, makeCtx(dir, sandbox));
}

/** Everything under dir (relative path -> content), to prove a failed patch wrote nothing. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out[path.relative(dir, p)] = read(p);
      else out[path.relative(dir, p)] = "<link>";
    }
  };
  walk(dir);
  return out;
}

describe("apply_patch", () => {
  test("adds, updates, deletes and moves files, with the summary", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "mod.txt"), "one\ntwo\nthree\n");
      write(path.join(dir, "gone.txt"), "bye\n");
      write(path.join(dir, "src", "app.py"), "def greet():\n    print('hi')\n");
      const out = okText(
        await apply(
          dir,
          patch(
            "*** Add File: nested/dir/new.txt",
            "+hello",
            "+world",
            "*** Update File: mod.txt",
            "@@",
            " one",
            "-two",
            "+TWO",
            " three",
            "*** Delete File: gone.txt",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def greet():",
            "-    print('hi')",
            "+    print('hello')",
          ),
        ),
      );
      assert.equal(
        out,
        "Success. Updated the following files:\nA nested/dir/new.txt\nM mod.txt\nD gone.txt\nM src/main.py",
      );
      assert.equal(read(path.join(dir, "nested/dir/new.txt")), "hello\nworld\n");
      assert.equal(read(path.join(dir, "mod.txt")), "one\nTWO\nthree\n");
      assert.equal(fs.existsSync(path.join(dir, "gone.txt")), false);
      assert.equal(fs.existsSync(path.join(dir, "src/app.py")), false);
      assert.equal(read(path.join(dir, "src/main.py")), "def greet():\n    print('hello')\n");
      assert.deepEqual(
        Object.keys(snapshot(dir)).sort(),
        ["mod.txt", "nested/dir/new.txt", "src/main.py"],
        "no temp files left behind",
      );
    });
  });

  test("applies several hunks in order, using @@ context to pick the right duplicate", async () => {
    await withTmp(async (dir) => {
      const f = write(
        path.join(dir, "a.ts"),
        [
          "function a() {",
          "  return 1;",
          "}",
          "",
          "function b() {",
          "  return 1;",
          "}",
          "",
          "function c() {",
          "  return 1;",
          "}",
          "",
        ].join("\n"),
      );
      okText(
        await apply(
          dir,
          patch(
            "*** Update File: a.ts",
            "@@ function b() {",
            "-  return 1;",
            "+  return 2;",
            "@@ function c() {",
            "-  return 1;",
            "+  return 3;",
          ),
        ),
      );
      assert.equal(
        read(f),
        [
          "function a() {",
          "  return 1;",
          "}",
          "",
          "function b() {",
          "  return 2;",
          "}",
          "",
          "function c() {",
          "  return 3;",
          "}",
          "",
        ].join("\n"),
      );
    });
  });

  test("*** End of File anchors the hunk at the end even when the lines also occur earlier", async () => {
    await withTmp(async (dir) => {
      const f = write(path.join(dir, "e.txt"), "x\nend\nmiddle\nx\nend\n");
      okText(await apply(dir, patch("*** Update File: e.txt", "@@", " x", "-end", "+END", "*** End of File")));
      assert.equal(read(f), "x\nend\nmiddle\nx\nEND\n");
      okText(await apply(dir, patch("*** Update File: e.txt", "@@", "+appended", "*** End of File")));
      assert.equal(read(f), "x\nend\nmiddle\nx\nEND\nappended\n");
    });
  });

  test("matches despite trailing and surrounding whitespace differences and typographic quotes", async () => {
    await withTmp(async (dir) => {
      const f = write(path.join(dir, "w.py"), "def f():  \n\tvalue = 1\t\n    return value\nprint(“done”)\n");
      okText(
        await apply(
          dir,
          patch("*** Update File: w.py", "@@", " def f():", "-    value = 1", "+    value = 2", "     return value"),
        ),
      );
      assert.equal(read(f), "def f():  \n    value = 2\n    return value\nprint(“done”)\n");
      okText(await apply(dir, patch("*** Update File: w.py", "@@", '-print("done")', "+print('ok')")));
      assert.equal(read(f), "def f():  \n    value = 2\n    return value\nprint('ok')\n");
    });
  });

  test("an insertion-only hunk goes after its @@ line, or at the end without one", async () => {
    await withTmp(async (dir) => {
      const f = write(path.join(dir, "c.py"), "class A:\n    pass\nclass B:\n    pass\n");
      okText(await apply(dir, patch("*** Update File: c.py", "@@ class B:", "+    x = 1", "@@", "+# end")));
      assert.equal(read(f), "class A:\n    pass\nclass B:\n    x = 1\n    pass\n# end\n");
    });
  });

  test("keeps CRLF line endings, a missing final newline and the file mode", async () => {
    await withTmp(async (dir) => {
      const crlf = write(path.join(dir, "win.txt"), "a\r\nb\r\nc\r\n");
      const bare = write(path.join(dir, "bare.txt"), "a\nb");
      const script = write(path.join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
      fs.chmodSync(script, 0o755);
      okText(
        await apply(
          dir,
          patch(
            "*** Update File: win.txt",
            "-b",
            "+B",
            "*** Update File: bare.txt",
            "-b",
            "+B",
            "*** Update File: run.sh",
            "-echo hi",
            "+echo bye",
          ),
        ),
      );
      assert.equal(read(crlf), "a\r\nB\r\nc\r\n");
      assert.equal(read(bare), "a\nB");
      assert.equal(read(script), "#!/bin/sh\necho bye\n");
      if (process.platform !== "win32") assert.equal(fs.statSync(script).mode & 0o777, 0o755);
    });
  });

  test("later operations see earlier ones: add then update the same file", async () => {
    await withTmp(async (dir) => {
      okText(await apply(dir, patch("*** Add File: n.txt", "+v1", "*** Update File: n.txt", "-v1", "+v2")));
      assert.equal(read(path.join(dir, "n.txt")), "v2\n");
    });
  });

  test("a hunk that does not apply in the second file leaves the first file untouched", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "first.txt"), "alpha\nbeta\n");
      write(path.join(dir, "second.txt"), "gamma\ndelta\n");
      write(path.join(dir, "third.txt"), "keep me\n");
      const before = snapshot(dir);
      const e = errOf(
        await apply(
          dir,
          patch(
            "*** Update File: first.txt",
            "-beta",
            "+BETA",
            "*** Add File: added.txt",
            "+new",
            "*** Delete File: third.txt",
            "*** Update File: second.txt",
            "@@",
            " gamma",
            "-epsilon",
            "+EPSILON",
          ),
        ),
        "patch_failed",
      );
      assert.match(e.message, /second\.txt/);
      assert.match(e.message, /hunk 1 \(patch line 9\): could not find these lines:\ngamma\nepsilon\n/);
      assert.match(e.message, /No files were changed/);
      assert.deepEqual(snapshot(dir), before);
    });
  });

  test("an @@ context line that is not in the file is reported", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "a.txt"), "one\n");
      const e = errOf(
        await apply(dir, patch("*** Update File: a.txt", "@@ def missing():", "-one", "+two")),
        "patch_failed",
      );
      assert.match(
        e.message,
        /could not find the line given after "@@":\n def missing\(\):|could not find the line given after "@@":\ndef missing\(\):/,
      );
    });
  });

  test("updating or deleting a missing file fails naming it; nothing is written", async () => {
    await withTmp(async (dir) => {
      const upd = errOf(
        await apply(dir, patch("*** Add File: a.txt", "+x", "*** Update File: nope.txt", "-a", "+b")),
        "patch_failed",
      );
      assert.match(upd.message, /nope\.txt: the file does not exist\. Use "\*\*\* Add File:"/);
      const del = errOf(await apply(dir, patch("*** Delete File: gone.txt")), "patch_failed");
      assert.match(del.message, /cannot delete gone\.txt/);
      assert.deepEqual(snapshot(dir), {});
    });
  });

  test("parse errors come back as invalid_patch values", async () => {
    await withTmp(async (dir) => {
      const e = errOf(await apply(dir, "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"), "invalid_patch");
      assert.match(e.message, /line 2/);
    });
  });

  test("a read-only sandbox refuses the patch and writes nothing", async () => {
    await withTmp(async (dir) => {
      const f = write(path.join(dir, "a.txt"), "x\n");
      const e = errOf(
        await apply(dir, patch("*** Update File: a.txt", "-x", "+y", "*** Add File: b.txt", "+b"), {
          mode: "read-only",
          writable_roots: [dir],
          network: false,
        }),
        "sandbox_denied",
      );
      assert.match(e.message, /read-only/);
      assert.equal(read(f), "x\n");
      assert.equal(fs.existsSync(path.join(dir, "b.txt")), false);
    });
  });

  test("workspace-write refuses targets outside the roots, even when another target is inside", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      fs.mkdirSync(root);
      const e = errOf(
        await apply(root, patch("*** Add File: inside.txt", "+ok", "*** Add File: ../outside.txt", "+no"), ws(root)),
        "sandbox_denied",
      );
      assert.ok(e.message.includes(path.join(dir, "outside.txt")), e.message);
      assert.deepEqual(snapshot(dir), {});
      const move = errOf(
        await apply(
          root,
          patch(
            "*** Add File: a.txt",
            "+a",
            "*** Update File: a.txt",
            `*** Move to: ${path.join(dir, "moved.txt")}`,
            "-a",
            "+b",
          ),
          ws(root),
        ),
        "sandbox_denied",
      );
      assert.match(move.message, /writable roots/);
      assert.deepEqual(snapshot(dir), {});
      okText(await apply(root, patch("*** Add File: inside.txt", "+ok"), ws(root)));
      assert.equal(read(path.join(root, "inside.txt")), "ok\n");
    });
  });

  test("workspace-write keeps .git, .relay and .checkpoints.git inside a root read-only, as the sandbox does for commands", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      fs.mkdirSync(path.join(root, ".git", "hooks"), { recursive: true });
      write(path.join(root, ".git", "config"), "[core]\n");
      for (const p of [
        patch("*** Add File: .git/hooks/pre-commit", "+touch /tmp/pwned"),
        patch("*** Update File: .git/config", "-[core]", "+[core] hooksPath=/tmp"),
        patch("*** Add File: .relay/config.toml", "+x"),
        patch("*** Add File: .checkpoints.git/HEAD", "+x"),
        patch("*** Add File: ok.txt", "+ok", "*** Add File: .git/info/x", "+x"),
      ]) {
        const e = errOf(await apply(root, p, ws(root)), "sandbox_denied");
        assert.match(e.message, /stays read-only inside the writable root/);
      }
      assert.equal(fs.existsSync(path.join(root, ".git", "hooks", "pre-commit")), false);
      assert.equal(read(path.join(root, ".git", "config")), "[core]\n");
      assert.equal(fs.existsSync(path.join(root, "ok.txt")), false, "all or nothing");
      // a file merely named like one, deeper down, is an ordinary file
      okText(await apply(root, patch("*** Add File: sub/.gitkeep", "+"), ws(root)));
    });
  });

  test("workspace-write refuses the policy's read_only_paths inside a root, all or nothing", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      fs.mkdirSync(path.join(root, "index"), { recursive: true });
      write(path.join(root, "run.json"), "{}\n");
      const policy = { ...ws(root), read_only_paths: [path.join(root, "run.json"), path.join(root, "index")] };
      for (const p of [
        patch("*** Update File: run.json", "-{}", '+{"status":"complete"}'),
        patch("*** Add File: ok.txt", "+ok", "*** Add File: index/claims.json", "+{}"),
      ]) {
        const e = errOf(await apply(root, p, policy), "sandbox_denied");
        assert.match(e.message, /is read-only in this sandbox/);
      }
      assert.equal(read(path.join(root, "run.json")), "{}\n");
      assert.deepEqual(fs.readdirSync(root).sort(), ["index", "run.json"]);
    });
  });

  test("workspace-write refuses a target reached through a symlink that leaves the root", async () => {
    await withTmp(async (dir) => {
      const root = path.join(dir, "root");
      const outside = path.join(dir, "outside");
      fs.mkdirSync(root);
      fs.mkdirSync(outside);
      const target = write(path.join(outside, "t.txt"), "secret\n");
      fs.symlinkSync(outside, path.join(root, "link-out"));
      fs.symlinkSync(target, path.join(root, "t-link.txt"));
      for (const p of [
        patch("*** Add File: link-out/x.txt", "+x"),
        patch("*** Update File: link-out/t.txt", "-secret", "+changed"),
        patch("*** Update File: t-link.txt", "-secret", "+changed"),
      ]) {
        const e = errOf(await apply(root, p, ws(root)), "sandbox_denied");
        assert.ok(e.message.includes(outside), e.message);
      }
      assert.deepEqual(fs.readdirSync(outside), ["t.txt"]);
      assert.equal(read(target), "secret\n");
    });
  });

  test("an update through a symlink inside the root edits the target and keeps the link", async () => {
    await withTmp(async (dir) => {
      const real = write(path.join(dir, "real.txt"), "a\n");
      fs.symlinkSync(real, path.join(dir, "alias.txt"));
      okText(await apply(dir, patch("*** Update File: alias.txt", "-a", "+b"), ws(dir)));
      assert.equal(read(real), "b\n");
      assert.ok(fs.lstatSync(path.join(dir, "alias.txt")).isSymbolicLink());
    });
  });
});

describe("hunk matching", () => {
  test("seekSequence prefers exact, then trailing, then surrounding whitespace", () => {
    const lines = ["a ", " a", "a"];
    assert.equal(seekSequence(lines, ["a"], 0, false), 2);
    assert.equal(seekSequence(["x", "a  ", " a"], ["a"], 0, false), 1);
    assert.equal(seekSequence(["x", "  a  "], ["a"], 0, false), 1);
    assert.equal(seekSequence(["a", "b"], ["a", "b", "c"], 0, false), undefined);
    assert.equal(seekSequence(["a", "b", "a"], ["a"], 1, false), 2);
    assert.equal(seekSequence(["a", "b", "a"], ["a"], 0, true), 2);
  });

  test("applyChunks reports the lines it could not find", () => {
    const chunk = {
      oldLines: ["zz"],
      newLines: ["y"],
      lines: [
        { kind: "-" as const, text: "zz" },
        { kind: "+" as const, text: "y" },
      ],
      endOfFile: false,
      line: 4,
    };
    const r = applyChunks("a\nb\n", [chunk], "f.txt");
    const e = errOf(r, "patch_failed");
    assert.match(
      e.message,
      /^Failed to apply the patch to f\.txt: hunk 1 \(patch line 4\): could not find these lines:\nzz\n/,
    );
  });
});

describe("fileTools", () => {
  test("exports the four tools with JSON schemas whose fields carry descriptions", () => {
    assert.deepEqual(
      fileTools.map((t) => t.name),
      ["read_file", "list_dir", "grep_files", "apply_patch"],
    );
    assert.deepEqual(
      fileTools.map((t) => t.readOnly),
      [true, true, true, false],
    );
    for (const tool of fileTools) {
      const schema = toolJsonSchema(tool) as { properties: Record<string, { description?: string }> };
      for (const [name, prop] of Object.entries(schema.properties)) {
        assert.ok(prop.description && prop.description.length > 10, `${tool.name}.${name} lacks a description`);
      }
    }
  });
});

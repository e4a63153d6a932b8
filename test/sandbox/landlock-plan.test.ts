import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { PROTECTED_NAMES } from "../../src/contracts/protected-names.ts";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import {
  type ConfinePlan,
  Fs,
  findPaths,
  handledFsFor,
  Net,
  type PlanInput,
  planConfinement,
  protectedPaths,
  rulesetAttrSize,
  Scope,
  writableRoots,
} from "../../src/sandbox/linux/landlock-plan.ts";

// Bits and sizes from include/uapi/linux/landlock.h, written out so the module is checked
// against the kernel's values rather than against itself.
const ABI1_FS = 0x1fff; // EXECUTE .. MAKE_SYM (bits 0..12)
const REFER = 1 << 13; // ABI 2
const TRUNCATE = 1 << 14; // ABI 3
const IOCTL_DEV = 1 << 15; // ABI 5
const READ = Fs.EXECUTE | Fs.READ_FILE | Fs.READ_DIR;
/** The only rights landlock_add_rule accepts on a rule for a non-directory (else EINVAL). */
const FILE_RIGHTS = Fs.EXECUTE | Fs.WRITE_FILE | Fs.READ_FILE | Fs.TRUNCATE | Fs.IOCTL_DEV;
const LATEST = 7;

const cleanup: string[] = [];
after(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the OS temp dir, removed after the run. */
function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-landlock-plan-"));
  cleanup.push(dir);
  return dir;
}

function policy(mode: SandboxPolicy["mode"], roots: string[] = [], extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode, writable_roots: roots, network: false, ...extra };
}

/** No host sockets unless a test names them: the host's own would make the plans differ by machine. */
function plan(input: Partial<PlanInput> & { policy: SandboxPolicy }): ReturnType<typeof planConfinement> {
  const found = input.found ?? { ...findPaths(input.policy, input.tmpdir), sockets: [] };
  return planConfinement({ abi: LATEST, userns: true, seccomp: true, ...input, found });
}

function okPlan(input: Partial<PlanInput> & { policy: SandboxPolicy }): ConfinePlan {
  const r = plan(input);
  assert.ok("ok" in r, `expected a plan, got missing: ${"missing" in r ? r.missing.join("; ") : ""}`);
  checkKernelRules(r.ok);
  return r.ok;
}

function missing(input: Partial<PlanInput> & { policy: SandboxPolicy }): string[] {
  const r = plan(input);
  assert.ok("missing" in r, `expected missing, got a plan`);
  assert.ok(r.missing.length > 0);
  return r.missing;
}

function isDir(p: string): boolean {
  return statSync(p).isDirectory(); // follows symlinks, as open(O_PATH) does in confine.c
}

/** What landlock_add_rule would reject: unhandled rights, or directory rights on a non-directory. */
function checkKernelRules(p: ConfinePlan): void {
  assert.equal(p.handledFs, handledFsFor(p.abi));
  for (const rule of p.rules) {
    assert.ok(path.isAbsolute(rule.path), `${rule.path} is absolute`);
    assert.ok(rule.access !== 0, `${rule.path} grants something`);
    assert.equal(
      rule.access & ~p.handledFs,
      0,
      `${rule.path}: 0x${rule.access.toString(16)} not within handled 0x${p.handledFs.toString(16)}`,
    );
    if (!isDir(rule.path)) {
      assert.equal(
        rule.access & ~FILE_RIGHTS,
        0,
        `${rule.path} is not a directory but is granted 0x${rule.access.toString(16)}`,
      );
    }
  }
  assert.equal(p.handledNet & ~(Net.BIND_TCP | Net.CONNECT_TCP), 0);
  assert.equal(p.scoped & ~(Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET), 0);
}

const ruleFor = (p: ConfinePlan, at: string) => p.rules.find((r) => r.path === at);
const has = (access: number, bits: number) => (access & bits) === bits;

describe("constants", () => {
  test("filesystem rights match landlock.h", () => {
    const bits = [
      Fs.EXECUTE,
      Fs.WRITE_FILE,
      Fs.READ_FILE,
      Fs.READ_DIR,
      Fs.REMOVE_DIR,
      Fs.REMOVE_FILE,
      Fs.MAKE_CHAR,
      Fs.MAKE_DIR,
      Fs.MAKE_REG,
      Fs.MAKE_SOCK,
      Fs.MAKE_FIFO,
      Fs.MAKE_BLOCK,
      Fs.MAKE_SYM,
      Fs.REFER,
      Fs.TRUNCATE,
      Fs.IOCTL_DEV,
    ];
    assert.deepEqual(
      bits,
      bits.map((_, i) => 1 << i),
    );
    assert.equal(Fs.REFER, REFER);
    assert.equal(Fs.TRUNCATE, TRUNCATE);
    assert.equal(Fs.IOCTL_DEV, IOCTL_DEV);
  });

  test("network rights and scopes match landlock.h", () => {
    assert.equal(Net.BIND_TCP, 1);
    assert.equal(Net.CONNECT_TCP, 2);
    assert.equal(Scope.ABSTRACT_UNIX_SOCKET, 1);
    assert.equal(Scope.SIGNAL, 2);
  });

  test("PROTECTED_NAMES are .git, .relay and an infty run's .checkpoints.git", () => {
    assert.deepEqual([...PROTECTED_NAMES].sort(), [".checkpoints.git", ".git", ".relay"]);
  });

  test("read_only_paths: only those that exist inside a writable root or temp dir need a read-only bind (symlink-free)", () => {
    const root = realpathSync(tempDir());
    const outside = realpathSync(tempDir());
    for (const f of [path.join(root, "run.json"), path.join(outside, "run.json")]) writeFileSync(f, "{}");
    mkdirSync(path.join(root, "index"));
    symlinkSync(path.join(root, "index"), path.join(outside, "index-link"));
    const read_only_paths = [
      path.join(root, "run.json"),
      path.join(outside, "run.json"),
      path.join(root, "missing.json"),
      path.join(outside, "index-link"),
    ];
    const confined = findPaths({
      mode: "workspace-write",
      writable_roots: [root],
      network: false,
      tmp_writable: false,
      read_only_paths,
    });
    assert.deepEqual(confined.readOnly.sort(), [path.join(root, "index"), path.join(root, "run.json")]);
    // With /tmp writable, a file under it needs the bind as well.
    const withTmp = findPaths({ mode: "workspace-write", writable_roots: [root], network: false, read_only_paths });
    assert.ok(withTmp.readOnly.includes(path.join(outside, "run.json")));
    assert.deepEqual(
      findPaths({ mode: "read-only", writable_roots: [root], network: false, read_only_paths }).readOnly,
      [],
      "read-only: Landlock keeps everything read-only already",
    );
  });
});

describe("handledFsFor", () => {
  test("grows with the ABI", () => {
    assert.equal(handledFsFor(0), 0);
    assert.equal(handledFsFor(-1), 0);
    assert.equal(handledFsFor(1), ABI1_FS);
    assert.equal(handledFsFor(2), ABI1_FS | REFER);
    assert.equal(handledFsFor(3), 0x7fff);
    assert.equal(handledFsFor(4), 0x7fff);
    assert.equal(handledFsFor(5), 0xffff);
    assert.equal(handledFsFor(6), 0xffff);
    assert.equal(handledFsFor(7), 0xffff);
  });
});

describe("rulesetAttrSize", () => {
  test("is sizeof(struct landlock_ruleset_attr) for the ABI", () => {
    for (const abi of [1, 2, 3]) assert.equal(rulesetAttrSize(abi), 8, `abi ${abi}`);
    for (const abi of [4, 5]) assert.equal(rulesetAttrSize(abi), 16, `abi ${abi}`);
    for (const abi of [6, 7, 8]) assert.equal(rulesetAttrSize(abi), 24, `abi ${abi}`);
  });
});

describe("planConfinement: what the kernel lacks", () => {
  test("ABI 0 is missing Landlock", () => {
    const m = missing({ policy: policy("read-only"), abi: 0 });
    assert.ok(
      m.some((s) => /Landlock/.test(s)),
      m.join("; "),
    );
  });

  test("ABI 0 is refused even with best effort: nothing would confine writes", () => {
    const m = missing({ policy: policy("workspace-write", [tempDir()], { best_effort: true }), abi: 0 });
    assert.ok(
      m.some((s) => /Landlock/.test(s)),
      m.join("; "),
    );
  });

  test("ABI 2 is missing ABI 3 for truncate", () => {
    const m = missing({ policy: policy("read-only"), abi: 2 });
    assert.ok(
      m.some((s) => s.includes("ABI 3") && /truncate/i.test(s)),
      m.join("; "),
    );
  });

  test("ABI 2 with best effort plans what it can and names the gap", () => {
    const p = okPlan({ policy: policy("read-only", [], { best_effort: true }), abi: 2 });
    assert.equal(p.abi, 2);
    assert.equal(p.handledFs, ABI1_FS | REFER);
    assert.ok(
      p.gaps.some((s) => s.includes("ABI 3") && /truncate/i.test(s)),
      p.gaps.join("; "),
    );
    assert.deepEqual(ruleFor(p, "/")?.access, READ);
  });

  test("a full kernel leaves no gaps", () => {
    assert.deepEqual(okPlan({ policy: policy("read-only") }).gaps, []);
    assert.deepEqual(okPlan({ policy: policy("workspace-write", [tempDir()]) }).gaps, []);
  });

  test("turning the network off without seccomp is missing seccomp", () => {
    const m = missing({ policy: policy("workspace-write", [tempDir()]), seccomp: false });
    assert.ok(
      m.some((s) => /seccomp/.test(s)),
      m.join("; "),
    );
    assert.ok(missing({ policy: policy("read-only"), seccomp: false }).some((s) => /seccomp/.test(s)));
  });

  test("without seccomp and best effort, sockets are not filtered and the gap is named", () => {
    const p = okPlan({ policy: policy("read-only", [], { best_effort: true }), seccomp: false });
    assert.equal(p.filterSockets, false);
    assert.ok(
      p.gaps.some((s) => /seccomp/.test(s)),
      p.gaps.join("; "),
    );
  });

  test("with the network on, seccomp is not needed", () => {
    const p = okPlan({ policy: policy("workspace-write", [tempDir()], { network: true }), seccomp: false });
    assert.deepEqual(p.gaps, []);
    assert.equal(p.filterSockets, false);
  });

  test("several gaps are all listed", () => {
    const m = missing({ policy: policy("read-only"), abi: 0, seccomp: false });
    assert.ok(m.some((s) => /Landlock/.test(s)));
    assert.ok(m.some((s) => /seccomp/.test(s)));
  });
});

describe("planConfinement: read-only", () => {
  const root = tempDir();
  mkdirSync(path.join(root, ".git"));
  const p = okPlan({ policy: policy("read-only", [root], { network: true }), tmpdir: root });

  test("reads and executes everything from /", () => {
    assert.equal(ruleFor(p, "/")?.access, READ);
  });

  test("grants write only on device paths under /dev", () => {
    for (const rule of p.rules) {
      if (rule.access & (Fs.WRITE_FILE | Fs.TRUNCATE))
        assert.ok(rule.path.startsWith("/dev/"), `${rule.path} is writable`);
      const create =
        Fs.REMOVE_DIR |
        Fs.REMOVE_FILE |
        Fs.MAKE_CHAR |
        Fs.MAKE_DIR |
        Fs.MAKE_REG |
        Fs.MAKE_SOCK |
        Fs.MAKE_FIFO |
        Fs.MAKE_BLOCK |
        Fs.MAKE_SYM |
        Fs.REFER;
      assert.equal(rule.access & create, 0, `${rule.path} may create or remove`);
    }
  });

  test("/dev/null stays writable (with O_TRUNC) when it exists", () => {
    const rule = ruleFor(p, "/dev/null");
    assert.ok(rule, "a /dev/null rule");
    assert.ok(has(rule.access, Fs.WRITE_FILE | Fs.READ_FILE | Fs.TRUNCATE));
  });

  test("has no rule for writable roots, /tmp or $TMPDIR", () => {
    const real = realpathSync(root);
    for (const at of [root, real, "/tmp", realpathSync("/tmp"), "/var/tmp", "/dev/shm"])
      assert.equal(ruleFor(p, at), undefined, at);
  });

  test("filters sockets and handles TCP, even if the policy says network", () => {
    assert.equal(p.filterSockets, true);
    assert.equal(p.handledNet, Net.BIND_TCP | Net.CONNECT_TCP);
  });

  test("binds nothing read-only (nothing is writable)", () => {
    assert.deepEqual(p.readOnly, []);
    assert.deepEqual(okPlan({ policy: policy("read-only", [root]), userns: false }).readOnly, []);
  });
});

describe("planConfinement: workspace-write", () => {
  test("the root's realpath gets write rights but no device creation", () => {
    const root = tempDir();
    const p = okPlan({ policy: policy("workspace-write", [root]) });
    const rule = ruleFor(p, realpathSync(root));
    assert.ok(rule, "a rule for the root");
    for (const [name, bit] of Object.entries({
      MAKE_REG: Fs.MAKE_REG,
      MAKE_DIR: Fs.MAKE_DIR,
      WRITE_FILE: Fs.WRITE_FILE,
      REMOVE_FILE: Fs.REMOVE_FILE,
      REMOVE_DIR: Fs.REMOVE_DIR,
      TRUNCATE: Fs.TRUNCATE,
      REFER: Fs.REFER,
      READ_FILE: Fs.READ_FILE,
    })) {
      assert.ok(has(rule.access, bit), `root grants ${name}`);
    }
    assert.equal(rule.access & Fs.MAKE_CHAR, 0, "no MAKE_CHAR");
    assert.equal(rule.access & Fs.MAKE_BLOCK, 0, "no MAKE_BLOCK");
  });

  test("/tmp, /var/tmp and $TMPDIR are writable by default", () => {
    const root = tempDir();
    const tmpdir = tempDir();
    const p = okPlan({ policy: policy("workspace-write", [root]), tmpdir });
    for (const at of [realpathSync("/tmp"), realpathSync("/var/tmp"), realpathSync(tmpdir)]) {
      assert.ok(has(ruleFor(p, at)?.access ?? 0, Fs.MAKE_REG | Fs.WRITE_FILE | Fs.REMOVE_FILE), `${at} is writable`);
    }
  });

  test("tmp_writable: false leaves /tmp and $TMPDIR out", () => {
    const root = tempDir();
    const tmpdir = tempDir();
    const p = okPlan({ policy: policy("workspace-write", [root], { tmp_writable: false }), tmpdir });
    for (const at of ["/tmp", realpathSync("/tmp"), "/var/tmp", "/dev/shm", realpathSync(tmpdir)])
      assert.equal(ruleFor(p, at), undefined, at);
    assert.ok(ruleFor(p, realpathSync(root)), "the root is still writable");
  });

  test("a symlinked root becomes its realpath", () => {
    const base = tempDir();
    const target = path.join(base, "target");
    const link = path.join(base, "link");
    mkdirSync(target);
    symlinkSync(target, link);
    const p = okPlan({ policy: policy("workspace-write", [link], { tmp_writable: false }) });
    assert.ok(ruleFor(p, realpathSync(target)));
    assert.equal(ruleFor(p, link), undefined);
    assert.deepEqual(writableRoots(policy("workspace-write", [link, target])).roots, [realpathSync(target)]);
  });

  test("a nonexistent root is dropped", () => {
    const base = tempDir();
    const gone = path.join(base, "does-not-exist");
    const p = okPlan({ policy: policy("workspace-write", [gone], { tmp_writable: false }) });
    assert.equal(ruleFor(p, gone), undefined);
    assert.ok(p.rules.every((r) => !r.path.startsWith(realpathSync(base))));
    assert.deepEqual(writableRoots(policy("workspace-write", [gone])).roots, []);
  });

  test("a .git directory in the root is bound read-only", () => {
    const root = tempDir();
    mkdirSync(path.join(root, ".git"));
    const real = realpathSync(root);
    const p = okPlan({ policy: policy("workspace-write", [root]) });
    assert.deepEqual(p.readOnly, [path.join(real, ".git")]);
    assert.ok(ruleFor(p, real), "the root itself stays writable");
  });

  test("a .git file (worktree or submodule) is protected too", () => {
    const root = tempDir();
    writeFileSync(path.join(root, ".git"), "gitdir: /elsewhere\n");
    assert.deepEqual(okPlan({ policy: policy("workspace-write", [root]) }).readOnly, [
      path.join(realpathSync(root), ".git"),
    ]);
  });

  test("without user namespaces a .git is missing them, and best effort leaves it writable with a gap", () => {
    const root = tempDir();
    mkdirSync(path.join(root, ".git"));
    const m = missing({ policy: policy("workspace-write", [root]), userns: false });
    assert.ok(
      m.some((s) => /user namespaces/.test(s) && s.includes(".git")),
      m.join("; "),
    );
    const p = okPlan({ policy: policy("workspace-write", [root], { best_effort: true }), userns: false });
    assert.deepEqual(p.readOnly, []);
    assert.ok(
      p.gaps.some((s) => /user namespaces/.test(s)),
      p.gaps.join("; "),
    );
  });

  test("without a .git or .relay, user namespaces are not needed", () => {
    const p = okPlan({ policy: policy("workspace-write", [tempDir()]), userns: false });
    assert.deepEqual(p.readOnly, []);
    assert.deepEqual(p.gaps, []);
  });

  test(".git and .relay are both protected", () => {
    const root = tempDir();
    mkdirSync(path.join(root, ".git"));
    mkdirSync(path.join(root, ".relay"));
    const real = realpathSync(root);
    const p = okPlan({ policy: policy("workspace-write", [root]) });
    assert.deepEqual([...p.readOnly].sort(), [path.join(real, ".git"), path.join(real, ".relay")]);
    const m = missing({ policy: policy("workspace-write", [root]), userns: false });
    assert.ok(
      m.some((s) => s.includes(".git") && s.includes(".relay")),
      m.join("; "),
    );
  });

  test("named sockets to hide: covered in the command's mount namespace; without user namespaces the command runs and the gap is said", () => {
    const root = tempDir();
    const found = {
      ...findPaths(policy("workspace-write", [root])),
      sockets: ["/run/docker.sock", "/run/user/1000/bus"],
    };
    assert.deepEqual(okPlan({ policy: policy("workspace-write", [root]), found }).hide, [
      "/run/docker.sock",
      "/run/user/1000/bus",
    ]);
    const p = okPlan({ policy: policy("workspace-write", [root]), found, userns: false });
    assert.deepEqual(p.hide, []);
    assert.equal(p.gaps.length, 1);
    assert.match(
      p.gaps[0]!,
      /^2 named Unix socket\(s\) outside the writable roots stay reachable \(\/run\/docker\.sock, \/run\/user\/1000\/bus\): hiding them needs unprivileged user namespaces$/,
    );
    const none = { ...findPaths(policy("workspace-write", [root])), sockets: undefined };
    assert.ok(
      missing({ policy: policy("workspace-write", [root]), found: none }).some((m) => m.includes("/proc/net/unix")),
    );
  });

  test("with the network on no socket is looked for", () => {
    const found = findPaths(policy("workspace-write", [tempDir()], { network: true }));
    assert.deepEqual(found.sockets, []);
    assert.deepEqual(okPlan({ policy: policy("workspace-write", [tempDir()], { network: true }), found }).hide, []);
  });

  test("the network on: no TCP handling, no socket filter", () => {
    for (const abi of [3, 4, 6, 7]) {
      const p = okPlan({ policy: policy("workspace-write", [tempDir()], { network: true }), abi });
      assert.equal(p.handledNet, 0, `abi ${abi}`);
      assert.equal(p.filterSockets, false, `abi ${abi}`);
    }
  });

  test("the network off: TCP handled from ABI 4, sockets filtered", () => {
    const root = tempDir();
    for (const abi of [4, 5, 6, 7]) {
      const p = okPlan({ policy: policy("workspace-write", [root]), abi });
      assert.equal(p.handledNet, Net.BIND_TCP | Net.CONNECT_TCP, `abi ${abi}`);
      assert.equal(p.filterSockets, true);
    }
    const p3 = okPlan({ policy: policy("workspace-write", [root]), abi: 3 });
    assert.equal(p3.handledNet, 0);
    assert.equal(p3.filterSockets, true);
  });

  test("signals and abstract unix sockets are scoped from ABI 6", () => {
    for (const abi of [6, 7])
      assert.equal(
        okPlan({ policy: policy("read-only"), abi }).scoped,
        Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET,
        `abi ${abi}`,
      );
    for (const abi of [3, 4, 5]) assert.equal(okPlan({ policy: policy("read-only"), abi }).scoped, 0, `abi ${abi}`);
  });
});

describe("planConfinement: rules the kernel accepts", () => {
  test("every rule is within handledFs and non-directories get file rights only, at every ABI", () => {
    const root = tempDir();
    mkdirSync(path.join(root, ".git"));
    const tmpdir = tempDir();
    for (let abi = 1; abi <= 8; abi++) {
      for (const pol of [
        policy("read-only"),
        policy("workspace-write", [root], { network: true }),
        policy("workspace-write", [root], { tmp_writable: false }),
      ]) {
        const p = okPlan({ policy: { ...pol, best_effort: true }, abi, tmpdir, userns: abi % 2 === 0 });
        assert.ok(p.rules.length > 0, `abi ${abi} has rules`);
      }
    }
  });

  test("device files such as /dev/null get only file rights", () => {
    const p = okPlan({ policy: policy("workspace-write", [tempDir()]) });
    const devices = p.rules.filter((r) => r.path.startsWith("/dev/") && !isDir(r.path));
    assert.ok(
      devices.some((r) => r.path === "/dev/null"),
      "/dev/null has a rule",
    );
    for (const r of devices) assert.equal(r.access & ~FILE_RIGHTS, 0, r.path);
  });

  // landlock_add_rule refuses directory rights on a file with EINVAL, which would stop every command.
  test("a writable root that is a regular file gets file rights only", () => {
    const file = path.join(tempDir(), "notes.txt");
    writeFileSync(file, "x");
    okPlan({ policy: policy("workspace-write", [file], { tmp_writable: false }) });
  });
});

describe("writableRoots and protectedPaths", () => {
  test("only workspace-write has writable roots and temp dirs", () => {
    const root = tempDir();
    for (const mode of ["read-only", "danger-full-access"] as const) {
      assert.deepEqual(writableRoots(policy(mode, [root]), root), { roots: [], temp: [] }, mode);
    }
    const w = writableRoots(policy("workspace-write", [root, root]), root);
    assert.deepEqual(w.roots, [realpathSync(root)]);
    assert.ok(w.temp.includes(realpathSync("/tmp")));
    assert.ok(w.temp.includes(realpathSync(root)));
    assert.equal(new Set(w.temp).size, w.temp.length, "temp dirs are unique");
    assert.deepEqual(writableRoots(policy("workspace-write", [root], { tmp_writable: false }), root).temp, []);
  });

  test("protectedPaths finds .git and .relay directly inside the roots only", () => {
    const a = realpathSync(tempDir());
    const b = realpathSync(tempDir());
    mkdirSync(path.join(a, ".git"));
    mkdirSync(path.join(b, ".relay"));
    mkdirSync(path.join(b, "sub", ".git"), { recursive: true });
    assert.deepEqual(protectedPaths([a, b]), [path.join(a, ".git"), path.join(b, ".relay")]);
    assert.deepEqual(protectedPaths([a, a]), [path.join(a, ".git")]);
    assert.deepEqual(protectedPaths([]), []);
  });

  test("protectedPaths skips a dangling .git symlink and resolves a live one", () => {
    const a = realpathSync(tempDir());
    symlinkSync(path.join(a, "nowhere"), path.join(a, ".git"));
    assert.deepEqual(protectedPaths([a]), []);
    const b = realpathSync(tempDir());
    mkdirSync(path.join(b, "real-git"));
    symlinkSync(path.join(b, "real-git"), path.join(b, ".git"));
    assert.deepEqual(protectedPaths([b]), [path.join(b, "real-git")]);
  });
});

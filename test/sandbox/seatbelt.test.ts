import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import {
  SANDBOX_EXEC,
  type SeatbeltOptions,
  seatbeltArgv,
  seatbeltProfile,
  seatbeltRoots,
} from "../../src/sandbox/seatbelt.ts";

/** Options for a fake filesystem where exactly `existing` exists and symlinks are `links`. */
function fakeFs(existing: string[] = [], links: Record<string, string> = {}, tmpdir?: string): SeatbeltOptions {
  const set = new Set(existing);
  return { realpath: (p) => links[p] ?? p, exists: (p) => set.has(p), tmpdir };
}

function policy(mode: SandboxPolicy["mode"], roots: string[] = [], extra: Partial<SandboxPolicy> = {}): SandboxPolicy {
  return { mode, writable_roots: roots, network: false, ...extra };
}

function profileFor(p: SandboxPolicy, opts: SeatbeltOptions = fakeFs()) {
  return seatbeltProfile(p, seatbeltRoots(p, opts));
}

/**
 * The top-level forms of a profile, comments dropped; throws when parentheses or strings do
 * not balance (strings and `;` comments may hold parentheses that do not count).
 */
function topLevelForms(profile: string): string[] {
  const forms: string[] = [];
  let depth = 0;
  let current = "";
  for (let i = 0; i < profile.length; i++) {
    const c = profile[i] as string;
    if (c === ";") {
      while (i < profile.length && profile[i] !== "\n") i++;
      continue;
    }
    if (c === '"') {
      const start = i;
      for (i++; i < profile.length && profile[i] !== '"'; i++) if (profile[i] === "\\") i++;
      if (i >= profile.length) throw new Error(`unterminated string at ${start}`);
      if (depth > 0) current += profile.slice(start, i + 1);
      continue;
    }
    if (c === "(") depth++;
    if (depth > 0) current += c;
    if (c === ")") {
      depth--;
      if (depth < 0) throw new Error(`unbalanced ")" at ${i}`);
      if (depth === 0) {
        forms.push(current.replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")"));
        current = "";
      }
    }
    if (depth === 0 && c !== ")" && !/\s/.test(c)) throw new Error(`text outside a form at ${i}: ${JSON.stringify(c)}`);
  }
  if (depth !== 0) throw new Error(`${depth} unclosed "("`);
  return forms;
}

const formsOf = (profile: string, op: string) =>
  topLevelForms(profile).filter((f) => f.startsWith(`(allow ${op}`) && /[ )]/.test(f.charAt(`(allow ${op}`.length)));
const referenced = (text: string) => [...text.matchAll(/\(param "([^"]*)"\)/g)].map((m) => m[1]);

describe("seatbelt argv", () => {
  test("sandbox-exec lives at its fixed system path", () => {
    assert.equal(SANDBOX_EXEC, "/usr/bin/sandbox-exec");
  });

  test("danger-full-access runs the command as it is", () => {
    const argv = ["git", "status", "--short"];
    assert.deepEqual(
      seatbeltArgv(argv, policy("danger-full-access", ["/ws"], { network: true }), fakeFs(["/ws/.git"])),
      argv,
    );
  });

  test("sandbox-exec gets the profile, one -D per parameter, then -- and the exact argv", () => {
    const argv = ["bash", "-c", "echo hi > out", "--", "-p", "-DX=y"];
    const p = policy("workspace-write", ["/ws"]);
    const opts = fakeFs(["/ws/.git"]);
    const out = seatbeltArgv(argv, p, opts);
    const { profile, params } = profileFor(p, opts);
    assert.deepEqual(out.slice(0, 3), [SANDBOX_EXEC, "-p", profile]);
    const sep = out.indexOf("--");
    assert.deepEqual(
      out.slice(3, sep).sort(),
      Object.entries(params)
        .map(([k, v]) => `-D${k}=${v}`)
        .sort(),
    );
    assert.ok(out.slice(3, sep).includes("-DWRITABLE_ROOT_0=/ws"));
    assert.deepEqual(out.slice(sep + 1), argv);
  });

  test("read-only argv carries no writable parameters", () => {
    const out = seatbeltArgv(["ls"], policy("read-only", ["/ws"], { network: true }), fakeFs(["/ws/.git"]));
    assert.deepEqual(
      out.filter((a) => a.startsWith("-D")),
      [],
    );
    assert.deepEqual(out.slice(-2), ["--", "ls"]);
  });
});

describe("seatbelt profile", () => {
  test("starts from deny default and balances for every mode", () => {
    const cases = [
      policy("read-only"),
      policy("read-only", ["/a"], { network: true }),
      policy("workspace-write", ["/a", "/b"], { network: true }),
      policy("workspace-write", ["/a"], { tmp_writable: false }),
      policy("workspace-write", [], { tmp_writable: false }),
    ];
    for (const p of cases) {
      const forms = topLevelForms(profileFor(p, fakeFs(["/a/.git", "/a/.relay"], {}, "/var/folders/x/T")).profile);
      assert.deepEqual(forms.slice(0, 2), ["(version 1)", "(deny default)"], p.mode);
      for (const f of forms) assert.match(f, /^\((allow|deny|version) /);
    }
  });

  test("the balance check itself rejects broken text", () => {
    assert.throws(() => topLevelForms("(allow file-read*"));
    assert.throws(() => topLevelForms("(allow file-read*))"));
    assert.throws(() => topLevelForms('(allow (literal "/x))'));
    assert.deepEqual(topLevelForms('; (\n(allow (literal "/x)")) ; )'), ['(allow (literal "/x)"))']);
  });

  test("allows process, signal-within-sandbox, sysctl and the basic mach services", () => {
    const forms = topLevelForms(profileFor(policy("read-only")).profile);
    for (const f of [
      "(allow process-exec)",
      "(allow process-fork)",
      "(allow signal (target same-sandbox))",
      "(allow sysctl-read)",
      "(allow file-read*)",
    ]) {
      assert.ok(forms.includes(f), f);
    }
    assert.ok(!forms.includes("(allow signal)"));
    const mach = formsOf(profileFor(policy("read-only")).profile, "mach-lookup").join(" ");
    assert.match(mach, /\(global-name "com\.apple\.system\.opendirectoryd\.libinfo"\)/);
    assert.match(mach, /\(global-name "com\.apple\.system\.logger"\)/);
  });

  test("read-only writes nothing but devices and has no network, whatever the policy lists", () => {
    const p = policy("read-only", ["/ws"], { network: true, tmp_writable: true });
    const { profile, params } = profileFor(p, fakeFs(["/ws/.git"], {}, "/var/folders/x/T"));
    assert.deepEqual(params, {});
    assert.deepEqual(referenced(profile), []);
    const writes = formsOf(profile, "file-write*");
    assert.equal(writes.length, 1);
    for (const filter of writes[0]!.slice("(allow file-write* ".length, -1).split(/ (?=\()/)) {
      assert.match(filter, /^\((literal "\/dev\/[a-z]+"|regex #"\^\/dev\/[^"]+")\)$/, filter);
    }
    assert.ok(writes[0]!.includes('(literal "/dev/null")'));
    assert.ok(writes[0]!.includes('(regex #"^/dev/ttys[0-9]+$")'));
    for (const op of ["network-outbound", "network-inbound", "network-bind"])
      assert.deepEqual(formsOf(profile, op), [], op);
    assert.ok(!topLevelForms(profile).includes("(allow system-socket)"));
  });

  test("read-only ignores roots handed to the profile builder directly", () => {
    const { profile, params } = seatbeltProfile(policy("read-only", [], { network: true }), {
      roots: [{ path: "/ws", readOnly: [] }],
      temp: ["/tmp"],
    });
    assert.deepEqual(params, {});
    assert.ok(!profile.includes("subpath"));
    assert.ok(!profile.includes("network-outbound"));
  });

  test("workspace-write has one subpath parameter per root holding its exact path", () => {
    const p = policy("workspace-write", ["/Users/me/ws", "/Users/me/other dir"], { tmp_writable: false });
    const { profile, params } = profileFor(p);
    assert.deepEqual(params, { WRITABLE_ROOT_0: "/Users/me/ws", WRITABLE_ROOT_1: "/Users/me/other dir" });
    const writes = formsOf(profile, "file-write*").join(" ");
    assert.ok(writes.includes('(subpath (param "WRITABLE_ROOT_0"))'));
    assert.ok(writes.includes('(subpath (param "WRITABLE_ROOT_1"))'));
    assert.ok(!profile.includes("require-not"));
  });

  test("an existing .git and .relay inside a root stay read-only; a root without them has no exclusion", () => {
    const p = policy("workspace-write", ["/ws", "/plain"], { tmp_writable: false });
    const { profile, params } = profileFor(p, fakeFs(["/ws/.git", "/ws/.relay", "/plain/src"]));
    assert.equal(params.WRITABLE_ROOT_0, "/ws");
    assert.equal(params.WRITABLE_ROOT_0_RO_0, "/ws/.git");
    assert.equal(params.WRITABLE_ROOT_0_RO_1, "/ws/.relay");
    assert.equal(params.WRITABLE_ROOT_1, "/plain");
    assert.deepEqual(
      Object.keys(params).filter((k) => k.startsWith("WRITABLE_ROOT_1_")),
      [],
    );
    const writes = formsOf(profile, "file-write*").join(" ");
    assert.ok(
      writes.includes(
        '(require-all (subpath (param "WRITABLE_ROOT_0")) (require-not (subpath (param "WRITABLE_ROOT_0_RO_0"))) (require-not (subpath (param "WRITABLE_ROOT_0_RO_1"))))',
      ),
    );
    assert.ok(writes.includes(' (subpath (param "WRITABLE_ROOT_1"))'));
    assert.equal(profile.match(/require-not/g)?.length, 2);
  });

  test("the policy's read_only_paths are excluded from every writable root and temp dir", () => {
    const p = policy("workspace-write", ["/ws"], { read_only_paths: ["/ws/store/run.json", "relative/ignored"] });
    const { profile, params } = profileFor(p, { ...fakeFs([]), tmpdir: undefined });
    assert.equal(params.READ_ONLY_0, "/ws/store/run.json");
    assert.equal(Object.keys(params).filter((k) => k.startsWith("READ_ONLY_")).length, 1, "a relative path is dropped");
    const writes = formsOf(profile, "file-write*").join(" ");
    assert.ok(
      writes.includes(
        '(require-all (subpath (param "WRITABLE_ROOT_0")) (require-not (subpath (param "READ_ONLY_0"))))',
      ),
      writes,
    );
    assert.ok(
      writes.includes('(require-all (subpath (param "TEMP_DIR_0")) (require-not (subpath (param "READ_ONLY_0"))))'),
      writes,
    );
  });

  test("a symlinked .git is protected as the link and as its target", () => {
    const p = policy("workspace-write", ["/ws"], { tmp_writable: false });
    const { params } = profileFor(p, fakeFs(["/ws/.git"], { "/ws/.git": "/ws/gitdir" }));
    assert.deepEqual(params, {
      WRITABLE_ROOT_0: "/ws",
      WRITABLE_ROOT_0_RO_0: "/ws/.git",
      WRITABLE_ROOT_0_RO_1: "/ws/gitdir",
    });
  });

  test("roots are resolved, normalized and deduplicated; relative roots are dropped", () => {
    const p = policy("workspace-write", ["/link/", "/real", "relative/dir", "/real/./"], { tmp_writable: false });
    const r = seatbeltRoots(p, fakeFs(["/real/.git"], { "/link": "/real" }));
    assert.deepEqual(r, { roots: [{ path: "/real", readOnly: ["/real/.git"] }], temp: [] });
  });

  test("network only in workspace-write with network on", () => {
    const unfiltered = (p: SandboxPolicy) => {
      const forms = topLevelForms(profileFor(p).profile);
      return ["(allow network-outbound)", "(allow network-inbound)", "(allow system-socket)"].filter((f) =>
        forms.includes(f),
      );
    };
    assert.deepEqual(unfiltered(policy("workspace-write", ["/ws"], { network: true })), [
      "(allow network-outbound)",
      "(allow network-inbound)",
      "(allow system-socket)",
    ]);
    assert.deepEqual(unfiltered(policy("workspace-write", ["/ws"], { network: false })), []);
    assert.deepEqual(unfiltered(policy("read-only", [], { network: true })), []);
    const mach = formsOf(profileFor(policy("workspace-write", ["/ws"], { network: true })).profile, "mach-lookup").join(
      " ",
    );
    assert.ok(mach.includes('"com.apple.trustd.agent"'));
    const offline = formsOf(profileFor(policy("workspace-write", ["/ws"])).profile, "mach-lookup").join(" ");
    assert.ok(!offline.includes('"com.apple.trustd.agent"'));
  });

  test("without network, Unix sockets are reachable only inside the writable places", () => {
    const { profile } = profileFor(policy("workspace-write", ["/ws"], { tmp_writable: false }));
    assert.ok(topLevelForms(profile).includes("(allow system-socket (socket-domain AF_UNIX))"));
    assert.deepEqual(formsOf(profile, "network-outbound"), [
      '(allow network-outbound (remote unix-socket (subpath (param "WRITABLE_ROOT_0"))))',
    ]);
    assert.deepEqual(formsOf(profile, "network-bind"), [
      '(allow network-bind (local unix-socket (subpath (param "WRITABLE_ROOT_0"))))',
    ]);
    assert.deepEqual(formsOf(profile, "network-inbound"), []);
  });

  test("temp directories are writable by default, resolved, and dropped by tmp_writable=false", () => {
    const links = { "/tmp": "/private/tmp", "/var/folders/x/T": "/private/var/folders/x/T" };
    const opts = fakeFs([], links, "/var/folders/x/T/");
    const on = profileFor(policy("workspace-write", ["/ws"]), opts);
    assert.deepEqual(on.params, {
      WRITABLE_ROOT_0: "/ws",
      TEMP_DIR_0: "/private/tmp",
      TEMP_DIR_1: "/private/var/folders/x/T",
    });
    const writes = formsOf(on.profile, "file-write*").join(" ");
    assert.ok(writes.includes('(subpath (param "TEMP_DIR_0"))') && writes.includes('(subpath (param "TEMP_DIR_1"))'));

    const unresolved = profileFor(policy("workspace-write", []), fakeFs()).params;
    assert.deepEqual(unresolved, { TEMP_DIR_0: "/tmp", TEMP_DIR_1: "/private/tmp" });

    const off = profileFor(policy("workspace-write", ["/ws"], { tmp_writable: false }), opts);
    assert.deepEqual(off.params, { WRITABLE_ROOT_0: "/ws" });
    assert.ok(!off.profile.includes("TEMP_DIR"));
  });

  test("a root that is also the temp dir is listed once, as a root", () => {
    const r = seatbeltRoots(policy("workspace-write", ["/tmp"]), fakeFs(["/tmp/.git"]));
    assert.deepEqual(r, { roots: [{ path: "/tmp", readOnly: ["/tmp/.git"] }], temp: ["/private/tmp"] });
  });

  test("no file-write* rule is ever unfiltered, even with nothing writable", () => {
    for (const p of [policy("workspace-write", [], { tmp_writable: false }), policy("read-only")]) {
      const forms = topLevelForms(profileFor(p).profile);
      for (const bare of ["(allow file-write*)", "(allow network-outbound)", "(allow network-bind)", "(allow default)"])
        assert.ok(!forms.includes(bare), bare);
      assert.equal(formsOf(profileFor(p).profile, "file-write*").length, 1, "only the device rule");
      assert.deepEqual(formsOf(profileFor(p).profile, "network-outbound"), []);
    }
  });

  test("paths with quotes, newlines or parentheses stay out of the profile text", () => {
    const weird = '/ws/a"b\nc) (allow default';
    const p = policy("workspace-write", [weird], { network: false });
    const opts = fakeFs([`${weird}/.git`], {}, '/var/folders/"T"');
    const { profile, params } = profileFor(p, opts);
    assert.equal(params.WRITABLE_ROOT_0, weird);
    assert.equal(params.WRITABLE_ROOT_0_RO_0, `${weird}/.git`);
    assert.equal(params.TEMP_DIR_2, '/var/folders/"T"');
    for (const piece of ['a"b', "c) (allow default", '"T"', "/ws/"]) assert.ok(!profile.includes(piece), piece);
    assert.ok(!topLevelForms(profile).includes("(allow default)"));
    const argv = seatbeltArgv(["true"], p, opts);
    assert.ok(argv.includes(`-DWRITABLE_ROOT_0=${weird}`));
  });

  test("every referenced parameter is defined and every defined one is used", () => {
    const p = policy("workspace-write", ["/a", "/b", "/c"], { network: true });
    const { profile, params } = profileFor(p, fakeFs(["/a/.git", "/c/.relay", "/c/.git"], {}, "/var/folders/x/T"));
    assert.deepEqual(new Set(referenced(profile)), new Set(Object.keys(params)));
  });

  test("default realpath and exists use the real filesystem", () => {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "relay-seatbelt-")));
    try {
      const ws = path.join(dir, "ws");
      mkdirSync(path.join(ws, ".git"), { recursive: true });
      symlinkSync(ws, path.join(dir, "link"));
      const r = seatbeltRoots(
        policy("workspace-write", [path.join(dir, "link"), path.join(dir, "missing")], { tmp_writable: false }),
      );
      assert.deepEqual(r.roots, [
        { path: ws, readOnly: [path.join(ws, ".git")] },
        { path: path.join(dir, "missing"), readOnly: [] },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

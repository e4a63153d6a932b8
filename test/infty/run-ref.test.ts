/** Run references: a full id, `last`, a unique prefix; ambiguous and unknown ones refused with the candidates or the fix. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { pickRun } from "../../src/infty/run-ref.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { runRelayAsync } from "../support/self.ts";

const ids = ["run-20261205-010203-ab12", "run-20261205-010203-ab99", "run-20261206-090000-cd34", "fix", "fix-parser"];

describe("run references", () => {
  test("a full id, even one that is a prefix of another", () => {
    assert.deepEqual(pickRun("fix", ids, undefined), { ok: "fix" });
    assert.deepEqual(pickRun("run-20261206-090000-cd34", ids, undefined), { ok: "run-20261206-090000-cd34" });
  });

  test("last: the newest run, or none yet", () => {
    assert.deepEqual(pickRun("last", ids, "fix-parser"), { ok: "fix-parser" });
    const none = pickRun("last", [], undefined);
    assert.ok(
      "error" in none && none.error.code === "run_not_found" && /no runs yet.*relay infty run/.test(none.error.message),
    );
  });

  test("a unique prefix; an ambiguous one lists the candidates; no match says how to list runs", () => {
    assert.deepEqual(pickRun("run-20261206", ids, undefined), { ok: "run-20261206-090000-cd34" });
    assert.deepEqual(pickRun("fix-", ids, undefined), { ok: "fix-parser" });
    const two = pickRun("run-20261205", ids, undefined);
    assert.ok("error" in two && two.error.code === "run_ambiguous");
    assert.equal(
      two.error.message,
      '"run-20261205" matches 2 runs; give more of the id:\n  run-20261205-010203-ab12\n  run-20261205-010203-ab99',
    );
    const many = pickRun(
      "r",
      Array.from({ length: 8 }, (_, i) => `r${i}`),
      undefined,
    );
    assert.ok("error" in many && /matches 8 runs.*\n {2}r4\n {2}… and 3 more$/s.test(many.error.message));
    assert.deepEqual(
      pickRun("cd34", ids, undefined),
      { ok: "run-20261206-090000-cd34" },
      "an end: the tag progress lines show",
    );
    assert.deepEqual(pickRun("parser", ids, undefined), { ok: "fix-parser" });
    const ends = pickRun(
      "010203-ab1",
      ["x-010203-ab12", "y-010203-ab13"].map((i) => i.replace(/\d$/, "")),
      undefined,
    );
    assert.ok("error" in ends && ends.error.code === "run_ambiguous");
    const none = pickRun("zzz", ids, undefined);
    assert.ok(
      "error" in none &&
        none.error.code === "run_not_found" &&
        /no run matches "zzz".*relay infty list/.test(none.error.message),
    );
  });
});

describe("relay infty <subcommand> with last or a prefix", () => {
  test("status, logs and checkpoints take last and a unique prefix; an ambiguous prefix is exit 2 with the candidates", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-run-ref-"));
    try {
      const stores = [];
      for (const id of ["alpha-1", "alpha-2", "beta"]) {
        const r = await RunStore.create(
          home,
          {
            run_id: id,
            objective: `objective of ${id}`,
            verifiers: 1,
            consensus: "all",
            max_turns: 1,
            max_wall_ms: 60_000,
            settings: undefined,
            role_timeout_ms: undefined,
            repo: undefined,
          },
          null,
        );
        assert.ok("ok" in r, JSON.stringify(r));
        stores.push(r.ok);
      }
      // The others were updated long ago: alpha-1 is the most recently updated run.
      for (const st of stores.slice(1)) {
        const file = path.join(st.dir, "run.json");
        writeFileSync(
          file,
          JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), updated_at: "2026-01-01T00:00:00.000Z" }),
        );
      }
      const env = { ...process.env, RELAY_HOME: home };
      const last = await runRelayAsync(["infty", "status", "last"], env);
      assert.match(last.stdout, /^run: +alpha-1 /, "the most recently updated run");
      assert.match((await runRelayAsync(["infty", "status", "be"], env)).stdout, /^run: +beta /);
      assert.equal((await runRelayAsync(["infty", "logs", "beta"], env)).status, 0);
      assert.equal((await runRelayAsync(["infty", "checkpoints", "alpha-2"], env)).status, 0);
      const ambiguous = await runRelayAsync(["infty", "status", "alpha"], env);
      assert.equal(ambiguous.status, 2);
      assert.equal(ambiguous.stderr, 'relay: "alpha" matches 2 runs; give more of the id:\n  alpha-1\n  alpha-2\n');
      const none = await runRelayAsync(["infty", "note", "gamma", "hello"], env);
      assert.equal(none.status, 2);
      assert.match(none.stderr, /no run gamma under .*relay infty list/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

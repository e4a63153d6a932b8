/** `relay infty run -C repo` end to end from the source tree (the compiled binary's run is in test/build/compiled.test.ts). */
import { describe, test } from "node:test";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { repoRunFixesTheTest } from "../support/infty-repo-run.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

// The run uses the default sandbox, as a new user's would: the built-in one (Bun's FFI).
const support = await probeSandbox();

describe("relay infty run on a repository", () => {
  const skip = skipBecause(
    "relay infty run on a repository",
    support.mechanism !== "landlock" && `the built-in sandbox cannot run here: ${support.detail}`,
  );
  test("a failing test is fixed on the run's branch, verified in a clean checkout of the commit; the user's checkout is untouched until apply; roles cannot write the orchestrator's files", {
    skip,
  }, async () => {
    useTestRelay();
    await repoRunFixesTheTest(relayArgv(), { ...process.env, RELAY_SANDBOX_SIMULATE: "no-bwrap" });
  });
});

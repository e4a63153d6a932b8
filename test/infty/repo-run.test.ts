/** `relay infty run -C repo` end to end from the source tree (the compiled binary's run is in test/build/compiled.test.ts). */
import { describe, test } from "node:test";
import { repoRunFixesTheTest } from "../support/infty-repo-run.ts";
import { relayArgv, useSourceRelay } from "../support/self.ts";

describe("relay infty run on a repository", () => {
  test("a failing test is fixed on the run's branch, verified in a clean checkout of the commit; the user's checkout is untouched until apply; roles cannot write the orchestrator's files", { skip: process.platform !== "linux" && "the default sandbox is Linux only" }, async () => {
    useSourceRelay();
    await repoRunFixesTheTest(relayArgv(), { ...process.env, RELAY_SANDBOX_SIMULATE: "no-bwrap" });
  });
});

/**
 * Long suites (cross-target package builds, crash-kills, the browser, the protocol fuzz, long
 * infty runs) run in .ci/run's steps of their own, so `npm test` stays quick. Each is skipped
 * here with the reason printed, never silently; RELAY_LONG_TESTS=1 runs it.
 */
import { skipBecause } from "./skip.ts";

export const LONG_TESTS = process.env.RELAY_LONG_TESTS === "1";

/** The skip reason of `suite` outside the long step, or false inside it. */
export function longSuite(suite: string, takes: string): string | false {
  return skipBecause(
    suite,
    !LONG_TESTS && `a long suite (${takes}), run by .ci/run as its own step; set RELAY_LONG_TESTS=1 to run it here`,
  );
}

/** The live view's mark beside a run's status: "● live" only for a run going on now, "⚠ stale" for one left behind. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { driverMark } from "../../../src/infty/serve/page/driver-mark.ts";

const why = "stale: driver pid 123 gone; resume with: relay infty resume r1";

describe("the driver mark", () => {
  test("live for a running run a process drives; stale for a running run whose driver is gone", () => {
    assert.equal(driverMark("running", true, undefined), "live");
    assert.equal(driverMark("running", false, why), "stale");
  });

  test("nothing for a run that ended, even while its driver still holds the lease (exiting, or a restore)", () => {
    for (const status of ["complete", "failed", "interrupted", "budget_exhausted"])
      assert.equal(driverMark(status, true, undefined), undefined, status);
    assert.equal(driverMark("complete", false, undefined), undefined);
  });
});

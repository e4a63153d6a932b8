/** util/local-time.ts: local fields without the zone database where the zone is UTC, the Date getters elsewhere. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { localFields, localZoneIsUtc } from "../../src/util/local-time.ts";

describe("local time", () => {
  test("TZ decides when it is set: UTC names yes, other zones and an empty TZ no", () => {
    for (const tz of ["UTC", ":UTC", "Etc/UTC", "UTC0", "GMT", "Zulu"])
      assert.equal(localZoneIsUtc({ TZ: tz }), true, tz);
    for (const tz of ["Europe/Berlin", "Asia/Kolkata", "", "UTC+1", "EST5EDT"])
      assert.equal(localZoneIsUtc({ TZ: tz }), false, tz);
  });

  test("without TZ, /etc/localtime's link target decides; a copied zone file or none is not known to be UTC", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-localtime-"));
    try {
      const link = (name: string, target: string) => {
        const p = path.join(dir, name);
        symlinkSync(target, p);
        return p;
      };
      assert.equal(localZoneIsUtc({}, link("a", "/usr/share/zoneinfo/Etc/UTC")), true);
      assert.equal(localZoneIsUtc({}, link("b", "../usr/share/zoneinfo/UTC")), true);
      assert.equal(localZoneIsUtc({}, link("c", "/usr/share/zoneinfo/Europe/Berlin")), false);
      assert.equal(localZoneIsUtc({}, link("d", "/usr/share/zoneinfo/America/Argentina/Buenos_Aires")), false);
      writeFileSync(path.join(dir, "copied"), "TZif2");
      assert.equal(localZoneIsUtc({}, path.join(dir, "copied")), false);
      assert.equal(localZoneIsUtc({}, path.join(dir, "missing")), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the fields: UTC's where the zone is UTC, the Date getters' otherwise, and this process's agree with its getters", () => {
    const at = new Date(Date.UTC(2026, 11, 31, 23, 59, 58));
    assert.deepEqual(localFields(at, true), { year: 2026, month: 12, day: 31, hours: 23, minutes: 59, seconds: 58 });
    const local = {
      year: at.getFullYear(),
      month: at.getMonth() + 1,
      day: at.getDate(),
      hours: at.getHours(),
      minutes: at.getMinutes(),
      seconds: at.getSeconds(),
    };
    assert.deepEqual(localFields(at, false), local);
    assert.deepEqual(localFields(at), local);
  });
});

import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { sessionsDir } from "../../src/home/home.ts";
import { findRollout, listRollouts, parseRolloutFilename } from "../../src/rollout/find.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { must, mustErr, withHome } from "./support.ts";

const IDS = {
  old: "0199aaaa-1111-7000-8000-000000000001",
  twinA: "0199bbbb-2222-7000-8000-000000000002",
  twinB: "0199bbbb-3333-7000-8000-000000000003",
  newest: "0199cccc-4444-7000-8000-000000000004",
};

async function session(home: string, id: string, now: Date): Promise<string> {
  const w = must(await RolloutWriter.create({ home, meta: { id, cwd: "/p", source: "exec" }, now }));
  must(await w.close());
  return w.path;
}

async function populate(home: string): Promise<Record<keyof typeof IDS, string>> {
  return {
    old: await session(home, IDS.old, new Date(2024, 11, 31, 23, 59, 59)),
    twinA: await session(home, IDS.twinA, new Date(2025, 5, 1, 9, 0, 0)),
    twinB: await session(home, IDS.twinB, new Date(2025, 5, 1, 9, 0, 0)),
    newest: await session(home, IDS.newest, new Date(2025, 5, 2, 8, 0, 0)),
  };
}

describe("finding rollouts", () => {
  test("listing is newest first across year/month/day directories, and honours the limit", async () => {
    await withHome(async (home) => {
      const paths = await populate(home);
      await mkdir(path.join(sessionsDir(home), "2025", "06", "02"), { recursive: true });
      await writeFile(path.join(sessionsDir(home), "2025", "06", "02", "notes.txt"), "not a rollout");
      const all = await listRollouts(home);
      assert.deepEqual(
        all.map((f) => f.path),
        [paths.newest, paths.twinB, paths.twinA, paths.old],
      );
      assert.deepEqual(all[0]!.createdAt, new Date(2025, 5, 2, 8, 0, 0));
      assert.equal(all[0]!.id, IDS.newest);
      assert.deepEqual(
        (await listRollouts(home, { limit: 2 })).map((f) => f.id),
        [IDS.newest, IDS.twinB],
      );
    });
  });

  test("a home without sessions lists nothing, and `last` says so", async () => {
    await withHome(async (home) => {
      assert.deepEqual(await listRollouts(home), []);
      const e = mustErr(await findRollout(home, "last"));
      assert.equal(e.code, "session_not_found");
      assert.match(e.message, /no sessions/);
    });
  });

  test("`last`, a full id (any case) and a unique prefix resolve", async () => {
    await withHome(async (home) => {
      const paths = await populate(home);
      assert.equal(must(await findRollout(home, "last")).path, paths.newest);
      assert.equal(must(await findRollout(home, IDS.twinA)).path, paths.twinA);
      assert.equal(must(await findRollout(home, IDS.twinB.toUpperCase())).path, paths.twinB);
      assert.equal(must(await findRollout(home, "0199aaaa")).path, paths.old);
      assert.equal(must(await findRollout(home, "0199bbbb-3")).path, paths.twinB);
    });
  });

  test("an ambiguous prefix lists the candidates; short, malformed and unknown ids are refused", async () => {
    await withHome(async (home) => {
      await populate(home);
      const amb = mustErr(await findRollout(home, "0199bbbb"));
      assert.equal(amb.code, "session_ambiguous");
      assert.match(amb.message, /matches 2 sessions/);
      assert.ok(amb.message.includes(IDS.twinA) && amb.message.includes(IDS.twinB), amb.message);
      assert.ok(!amb.message.includes(IDS.old));

      const short = mustErr(await findRollout(home, "0199b"));
      assert.equal(short.code, "session_bad_id");
      assert.match(short.message, /at least 8 characters/);

      assert.equal(mustErr(await findRollout(home, "not-an-id!")).code, "session_bad_id");

      const none = mustErr(await findRollout(home, "0199ffff", { listHint: "`relay sessions`" }));
      assert.equal(none.code, "session_not_found");
      assert.match(none.message, /no session id starts with "0199ffff" \(list sessions with `relay sessions`\)/);
      assert.ok(none.message.includes(IDS.newest), "the newest sessions are shown");
    });
  });

  test("a path to a rollout file resolves to it, named or not", async () => {
    await withHome(async (home) => {
      const paths = await populate(home);
      const f = must(await findRollout(home, paths.old));
      assert.equal(f.id, IDS.old);
      const copy = path.join(home, "saved.jsonl");
      await writeFile(copy, await readFile(paths.twinA));
      const c = must(await findRollout(home, copy));
      assert.equal(c.id, IDS.twinA);
      assert.equal(mustErr(await findRollout(home, path.join(home, "nope.jsonl"))).code, "session_not_found");
    });
  });

  test("filename parsing", () => {
    assert.deepEqual(parseRolloutFilename(`/x/rollout-2025-06-01T09-00-00-${IDS.twinA}.jsonl`), {
      id: IDS.twinA,
      createdAt: new Date(2025, 5, 1, 9, 0, 0),
    });
    assert.equal(parseRolloutFilename("rollout-2025-06-01-abc.jsonl"), undefined);
  });
});

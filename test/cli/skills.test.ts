/**
 * `relay skills list` through the real CLI: every skill with its source, what was skipped and
 * why, each environment asked; and the flags of skills, environments and roots refused with exit
 * 2 and a message that says the form.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { SkillsListOutputSchema } from "../../src/capabilities/skill-sources.ts";
import { runRelayAsync } from "../support/self.ts";
import { ENV_ROOT, envDir, executorIn, writeSkill } from "../support/skills.ts";

const linuxOnly = { skip: process.platform !== "linux" && "a root at /proc/self/cwd needs Linux's /proc" };

function relay(args: string[], home: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home, NO_COLOR: "1" };
  delete env.OPENAI_API_KEY;
  return runRelayAsync(args, env);
}

describe("relay skills list", () => {
  test(
    "--json: sources, a collision, bad front matter, an environment over a pipe and one that does not start",
    linuxOnly,
    async () => {
      const home = mkdtempSync(path.join(os.tmpdir(), "relay-skills-home-"));
      const ws = mkdtempSync(path.join(os.tmpdir(), "relay-skills-ws-"));
      const env = envDir();
      try {
        writeSkill(path.join(home, "skills"), "deploy", { description: "local deploy" });
        writeSkill(path.join(home, "skills"), "quiet", { hidden: true });
        mkdirSync(path.join(ws, ".git"));
        writeSkill(path.join(ws, ".relay", "skills"), "review");
        writeSkill(path.join(ws, ".relay", "skills"), "broken", { frontMatter: "no front matter here\n" });
        writeSkill(env.skills, "deploy", { description: "the build host's deploy" });
        const r = await relay(
          [
            "skills",
            "list",
            "--json",
            "-C",
            ws,
            "--environment",
            `build=${executorIn(env.dir)}`,
            "--environment",
            "gone=/nonexistent/relay executor",
            "--capability-root",
            `id=deploy@1,env=build,path=${ENV_ROOT}`,
            "--capability-root",
            "gone:/opt/skills",
          ],
          home,
        );
        assert.equal(r.status, 0, r.stderr);
        const out = SkillsListOutputSchema.parse(JSON.parse(r.stdout));
        const byName = Object.fromEntries(out.skills.map((s) => [s.name, s]));
        assert.deepEqual(Object.keys(byName).sort(), ["deploy", "quiet", "review"]);
        assert.deepEqual(byName.deploy!.source, { kind: "environment", environmentId: "build", rootId: "deploy@1" });
        assert.equal(byName.deploy!.description, "the build host's deploy");
        assert.equal(byName.review!.source.kind, "local");
        assert.equal(byName.quiet!.hidden, true);
        const reasons = out.skipped.map((k) => k.reason).sort();
        assert.deepEqual(reasons, ["bad_front_matter", "collision", "unavailable_environment"]);
        assert.match(
          out.skipped.find((k) => k.reason === "collision")!.message,
          /skill deploy at .*home.*shadowed by the one at \/proc\/self\/cwd\/env-skills\/deploy\/SKILL.md \(environment build, root deploy@1\)/,
        );
        assert.deepEqual(
          out.environments.map((e) => [e.id, e.available]),
          [
            ["build", true],
            ["gone", false],
          ],
        );
        assert.match(out.environments[1]!.detail, /did not start/);

        const text = await relay(["skills", "list", "-C", ws], home);
        assert.equal(text.status, 0, text.stderr);
        assert.match(text.stdout, /^deploy +local RELAY_HOME\/skills/m, "without the root, the local deploy is back");
        assert.match(
          text.stdout,
          /3 skills \(1 hidden: invocable, not listed to the model\); 1 skipped:\n {2}bad_front_matter: /,
        );
      } finally {
        for (const d of [home, ws, env.dir]) rmSync(d, { recursive: true, force: true });
      }
    },
  );

  test("bad flags exit 2 with the form to use, before anything starts", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-skills-home-"));
    try {
      writeFileSync(path.join(home, "x"), "");
      const cases: Array<[string[], RegExp]> = [
        [
          ["--capability-root", "nocolon"],
          /--capability-root takes <environment>:<absolute path> or id=<id>,env=<environment>,path=<path>/,
        ],
        [["--capability-root", "id=a,path=/x"], /no environment/],
        [["--capability-root", "id=a,env=b c,path=/x"], /environment "b c" must be letters/],
        [
          ["--capability-root", "id=a,env=e,path=/x", "--capability-root", "id=a,env=f,path=/y"],
          /two capability roots have the id "a"/,
        ],
        [["--environment", "noequals"], /--environment takes NAME=COMMAND-LINE/],
        [["--environment", "b=echo a | cat"], /--environment b: .*not one program/],
        [["--environment", "local=relay executor"], /"local" is the name of the session's own executor/],
      ];
      for (const [flags, message] of cases) {
        for (const cmd of [
          ["skills", "list"],
          ["run", "--script", "examples/demo-script.json", "hi"],
          ["infty", "run", "--no-repo", "--script", "examples/infty-demo.json", "x"],
        ]) {
          const r = await relay([...cmd, ...flags], home);
          assert.equal(r.status, 2, `${cmd[0]} ${flags.join(" ")}: ${r.stderr}`);
          assert.match(r.stderr, message, `${cmd[0]} ${flags.join(" ")}`);
        }
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

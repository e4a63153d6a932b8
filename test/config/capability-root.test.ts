/** The root contract and the environment spec: both command-line forms, config.toml tables, records. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { selection } from "../../src/cli/session-options.ts";
import {
  capabilityRoot,
  formatCapabilityRoot,
  parseCapabilityRoot,
  recordedRoot,
} from "../../src/config/capability-root.ts";
import { parseConfig } from "../../src/config/config.ts";
import { mergeEnvironments, parseEnvironmentSpec } from "../../src/config/environment-spec.ts";
import { must, mustErr } from "../session/support.ts";

describe("capability roots and environments", () => {
  test("the long form takes an id; the short form derives a stable one; a comma may sit in a path", () => {
    assert.deepEqual(must(parseCapabilityRoot("id=deploy@1,env=build,path=/opt/plugins/deploy")), {
      id: "deploy@1",
      location: { type: "environment", environmentId: "build", path: "/opt/plugins/deploy" },
    });
    assert.deepEqual(must(parseCapabilityRoot("build:/opt/a")), capabilityRoot("build", "/opt/a", "build:/opt/a"));
    assert.equal(must(parseCapabilityRoot("env=e,path=/a,b")).location.path, "/a,b");
    assert.equal(must(parseCapabilityRoot("path=/x,environment=e")).id, "e:/x");
    for (const spec of ["id=deploy@1,env=build,path=/opt/plugins/deploy", "build:/opt/a"])
      assert.equal(formatCapabilityRoot(must(parseCapabilityRoot(spec))), spec);
    assert.match(mustErr(parseCapabilityRoot("id=a,id=b,env=e,path=/p")).message, /id given twice/);
    assert.match(mustErr(parseCapabilityRoot(":/p")).message, /no environment/);
    assert.deepEqual(recordedRoot("local:/s"), capabilityRoot("local", "/s"));
    assert.deepEqual(recordedRoot(capabilityRoot("b", "/s", "x")), capabilityRoot("b", "/s", "x"));
    assert.equal(recordedRoot({ id: "x" }), undefined);
  });

  test("--environment NAME=COMMAND-LINE; a later layer's command wins by name", () => {
    assert.deepEqual(must(parseEnvironmentSpec('build=ssh build-host "relay executor"')), {
      name: "build",
      command: 'ssh build-host "relay executor"',
    });
    assert.match(mustErr(parseEnvironmentSpec("=x")).message, /NAME=COMMAND-LINE/);
    assert.match(mustErr(parseEnvironmentSpec("b=")).message, /the command line is empty/);
    assert.deepEqual(
      mergeEnvironments(
        [
          { name: "a", command: "x" },
          { name: "b", command: "y" },
        ],
        undefined,
        [{ name: "a", command: "z" }],
      ),
      [
        { name: "a", command: "z" },
        { name: "b", command: "y" },
      ],
    );
  });

  test("config.toml: [environments.NAME] and [[capability_roots]]; flags, then recorded, then config", () => {
    const text =
      '[environments.build]\ncommand = "ssh build relay executor"\n\n[[capability_roots]]\nid = "deploy@1"\nenvironment = "build"\npath = "/opt/plugins/deploy"\n\n[[capability_roots]]\nenvironment = "local"\npath = "/skills"\n';
    const config = must(parseConfig(text, "config.toml")).config;
    const fromConfig = selection({}, {}, config);
    assert.deepEqual(fromConfig.capabilityRoots, [
      capabilityRoot("build", "/opt/plugins/deploy", "deploy@1"),
      capabilityRoot("local", "/skills"),
    ]);
    assert.deepEqual(fromConfig.environments, [{ name: "build", command: "ssh build relay executor" }]);
    assert.equal(fromConfig.executorName, "local");
    const recorded = selection(
      {},
      { capabilityRoots: [capabilityRoot("build", "/r")], environments: [{ name: "build", command: "other" }] },
      config,
    );
    assert.deepEqual(recorded.capabilityRoots, [capabilityRoot("build", "/r")]);
    assert.deepEqual(recorded.environments, [{ name: "build", command: "other" }]);
    const flags = selection(
      { capabilityRoot: ["x:/f"], environment: ["x=relay executor"] },
      { capabilityRoots: [capabilityRoot("build", "/r")] },
      config,
    );
    assert.deepEqual(flags.capabilityRoots, [capabilityRoot("x", "/f")]);
    assert.deepEqual(
      flags.environments.map((e) => e.name),
      ["build", "x"],
    );
    assert.match(
      mustErr(parseConfig('[environments."bad name"]\ncommand = "x"\n', "config.toml")).message,
      /environments/,
    );
  });
});

import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function packageCommand() {
  const pkg = new Command("package").description("build the canonical relay package directory and its archives");
  pkg
    .command("build")
    .description("build the package for a target")
    .option("--target <target>", "target platform (default: this host)")
    .action(() => notBuiltYet("relay package build", 8));
  return pkg;
}

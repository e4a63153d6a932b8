/**
 * Headless Chromium for the browser tests: Debian's `chromium` (apt-get install chromium; .ci/run
 * installs it when it can), driven by playwright-core pointed at that executable. RELAY_TEST_CHROMIUM
 * names another one. Without it the tests skip with the reason.
 */
import { findOnPath } from "../../src/util/which.ts";

export function chromiumPath(): string | undefined {
  return (
    process.env.RELAY_TEST_CHROMIUM ||
    findOnPath("chromium", process.env.PATH) ||
    findOnPath("chromium-browser", process.env.PATH)
  );
}

/** Why the browser tests cannot run here, or false. */
export function noChromium(): string | false {
  if (!process.versions.bun) return "the browser tests run under Bun (npm test)";
  return chromiumPath() ? false : "no chromium on PATH (apt-get install -y chromium, or set RELAY_TEST_CHROMIUM)";
}

export async function launchChromium() {
  const { chromium } = await import("playwright-core");
  // As root (CI, containers) Chromium's own sandbox cannot start; the pages are our own.
  return chromium.launch({
    executablePath: chromiumPath()!,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** The committed page-assets.ts is what scripts/build-page.ts makes of the page's sources now (Bun's bundler builds it). */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { skipBecause } from "../../support/skip.ts";

const noBun = skipBecause(
  "the page-assets freshness check",
  !process.versions.bun && "it needs Bun's bundler (npm test runs it)",
);

describe("relay infty serve: embedded page", () => {
  test("src/infty/serve/page-assets.ts is up to date with src/infty/serve/page/ (else: npm run build:page)", {
    skip: noBun,
  }, async () => {
    const { ASSETS_MODULE, pageAssetsSource } = await import("../../../scripts/build-page.ts");
    assert.ok(
      readFileSync(ASSETS_MODULE, "utf8") === (await pageAssetsSource()),
      "page-assets.ts is stale: run npm run build:page and commit it",
    );
  });

  test("the page loads its script and style from the server, with nothing inline and no other origin", async () => {
    const { PAGE_ASSETS } = await import("../../../src/infty/serve/page-assets.ts");
    const html = PAGE_ASSETS["/"]!.body;
    assert.match(html, /<script type="module" src="\/app\.js"><\/script>/);
    assert.doesNotMatch(html, /<script>|\son\w+=|style=|https?:\/\//);
    assert.doesNotMatch(
      PAGE_ASSETS["/app.js"]!.body + PAGE_ASSETS["/app.css"]!.body,
      /https?:\/\/(?!www\.w3\.org\/2000\/svg)/,
      "no CDN",
    );
  });
});

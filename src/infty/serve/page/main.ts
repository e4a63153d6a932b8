/** The page's entry: a hash router between the runs list (#/) and one run (#/run/<id>). */
import { h } from "./dom.ts";
import { runView } from "./run-view.ts";
import { runsView } from "./runs-view.ts";

const app = document.getElementById("app")!;
const conn = document.getElementById("conn")!;
let leave: (() => void) | undefined;

function route(): void {
  leave?.();
  const m = /^#\/run\/([^/]+)/.exec(location.hash);
  if (m) leave = runView(app, decodeURIComponent(m[1]!), (s) => (conn.textContent = s));
  else leave = runsView(app);
}

window.addEventListener("hashchange", route);
document.getElementById("brand")?.replaceChildren(h("a", { href: "#/" }, "relay infty"));
route();

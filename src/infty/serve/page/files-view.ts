/**
 * A run's files: the list of artifacts/, memory/, index/ and deliverable/, and a viewer. Markdown
 * is rendered by the escaping renderer; images are shown from the server (served with an image
 * type only); anything else is plain text. Nothing from a file ever runs.
 */
import type { FileEntry } from "../api-schemas.ts";
import { api } from "./api.ts";
import { clear, h } from "./dom.ts";
import { renderMarkdown } from "./markdown.ts";

const IMAGE = /\.(png|jpe?g|gif|webp)$/i;
const MAX_SHOWN = 512 * 1024;

export async function showFile(viewer: HTMLElement, runId: string, path: string): Promise<void> {
  clear(viewer);
  viewer.append(h("div", { class: "file-title" }, path));
  if (IMAGE.test(path)) {
    const img = h("img", { class: "file-image" });
    img.src = api.fileUrl(runId, path);
    img.alt = path;
    viewer.append(img);
    return;
  }
  try {
    const text = await api.fileText(runId, path);
    const shown =
      text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length - MAX_SHOWN} more characters)` : text;
    if (/\.md$/i.test(path)) {
      const md = h("div", { class: "markdown", data: { testid: "markdown" } });
      // renderMarkdown escapes every piece of text and drops unsafe links (see markdown.ts).
      md.innerHTML = renderMarkdown(shown);
      viewer.append(md);
    } else viewer.append(h("pre", { class: "file-text", data: { testid: "file-text" } }, shown));
  } catch (e) {
    viewer.append(h("p", { class: "error" }, (e as Error).message));
  }
}

export function fileList(files: FileEntry[], pick: (path: string) => void): HTMLElement {
  const list = h("ul", { class: "files", data: { testid: "files" } });
  for (const f of files) {
    const depth = f.path.split("/").length - 1;
    const name = f.path.split("/").at(-1)!;
    const item =
      f.kind === "dir"
        ? h("li", { class: "dir" }, `${name}/`)
        : h(
            "li",
            {},
            h(
              "a",
              { href: `#`, data: { path: f.path }, on: { click: (e) => (e.preventDefault(), pick(f.path)) } },
              name,
            ),
            h("span", { class: "size" }, ` ${f.size} B`),
          );
    item.style.paddingLeft = `${depth * 12}px`;
    list.appendChild(item);
  }
  return list;
}

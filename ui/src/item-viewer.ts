// The viewer of an item (a file at a line, an issue, a pull request, a commit): a dialog over
// whichever screen opened it, the Run screen's trace links and the Search screen's results alike.
// The text is the workspace's, read through the confined tools, and shown as text only.

import { api, errorMessage } from "./api";
import { h, replaceChildren } from "./dom";
import { describe } from "./links";
import type { ItemRef } from "./types";

// Outside every screen: a dialog inside a hidden screen would not show.
const viewer = h("dialog", { class: "item-viewer", id: "item-viewer" });
document.body.append(viewer);

/// Whether the viewer is open (it takes Esc itself).
export function viewerOpen(): boolean {
  return viewer.open;
}

/// The newest item asked for: the text of one asked before that comes later is dropped (a
/// large file opened, closed, then an issue opened would show the file under the name).
let asked = 0;

export async function openItem(item: ItemRef): Promise<void> {
  const id = ++asked;
  replaceChildren(
    viewer,
    h("header", null, h("h2", null, describe(item)), h("button", { onclick: () => viewer.close(), "aria-label": "Close" }, "Close")),
    h("p", { class: "muted" }, "Loading…"),
  );
  if (!viewer.open) viewer.showModal();
  let body: HTMLElement;
  try {
    body = h("pre", { class: "item-text" }, await api.openItem(item));
  } catch (e) {
    body = h("p", { class: "error-box" }, errorMessage(e));
  }
  if (id !== asked) return;
  viewer.querySelector("p, pre")?.replaceWith(body);
}

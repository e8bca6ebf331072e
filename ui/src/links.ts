// What a trace's items are called where they are shown as links. The items come from the tools'
// own locators (a step record's `items`), never from reading text: workspace text is untrusted
// and only ever rendered as text nodes.

import type { ItemRef } from "./types";

export function describe(item: ItemRef): string {
  switch (item.kind) {
    case "file":
      return item.line === null ? item.path : `${item.path}:${item.line}`;
    case "issue":
      return `#${item.number}`;
    case "pull_request":
      return `pull request #${item.number}`;
    case "commit":
      return `commit ${item.hash.slice(0, 12)}`;
  }
}

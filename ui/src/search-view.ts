// How a search result's snippet is shown: with the matches marked. Everything in a hit is
// workspace data (untrusted): it becomes text nodes and <mark> elements only, never HTML.

import { h } from "./dom";
import type { SearchKind } from "./types";

export const KIND_LABELS: Record<SearchKind, string> = {
  code: "code",
  doc: "document",
  commit: "commit",
  issue: "issue",
  pr: "pull request",
};

/// The snippet's text with each span between « and » (the search's marks) in a <mark>. A mark
/// left open runs to the end; a stray » is text.
export function highlight(snippet: string): (HTMLElement | string)[] {
  const out: (HTMLElement | string)[] = [];
  let rest = snippet;
  while (rest.length > 0) {
    const open = rest.indexOf("«");
    if (open < 0) {
      out.push(rest);
      break;
    }
    if (open > 0) out.push(rest.slice(0, open));
    const after = rest.slice(open + 1);
    const close = after.indexOf("»");
    const marked = close < 0 ? after : after.slice(0, close);
    if (marked) out.push(h("mark", null, marked));
    rest = close < 0 ? "" : after.slice(close + 1);
  }
  return out;
}

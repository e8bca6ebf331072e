// Finds what a trace mentions that can be opened: file:line, issue and pull request numbers,
// commit hashes. Text from the workspace is untrusted: it is only ever split into segments and
// rendered as text nodes, never as HTML.

import type { ItemRef } from "./types";

export type Segment = { text: string; item?: ItemRef };

// One pass over the text: the alternatives are tried left to right at each position.
const PATTERN = new RegExp(
  [
    // path/to/file.ext:123 (a path with a dot-extension, then a line number)
    String.raw`(?<file>(?<![\w./-])(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9}):(?<line>\d{1,7})(?!\d)`,
    // "PR #12", "pull request #12", "pull #12": a pull request; a bare "#12": an issue
    String.raw`(?<pr>\b(?:PR|[Pp]ull(?: [Rr]equest)?) #(?<prnum>\d{1,7}))(?!\w)`,
    String.raw`(?<![\w&])#(?<issue>\d{1,7})(?!\w)`,
    // 7 to 40 hex digits with at least one digit and one letter (not a word or a number)
    String.raw`(?<![\w])(?<hash>(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40})(?![\w])`,
  ].join("|"),
  "g",
);

export function linkify(text: string, repo: string | null = null): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(PATTERN)) {
    const g = m.groups ?? {};
    let item: ItemRef;
    if (g.file !== undefined) {
      item = { kind: "file", path: g.file, line: Number(g.line), repo };
    } else if (g.pr !== undefined) {
      item = { kind: "pull_request", number: Number(g.prnum), repo };
    } else if (g.issue !== undefined) {
      item = { kind: "issue", number: Number(g.issue), repo };
    } else {
      item = { kind: "commit", hash: g.hash, repo };
    }
    const start = m.index ?? 0;
    if (start > last) out.push({ text: text.slice(last, start) });
    out.push({ text: m[0], item });
    last = start + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  return out;
}

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

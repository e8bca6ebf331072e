import { describe, expect, it } from "vitest";
import { plural, reportSummary } from "../src/dom";
import type { IndexReport } from "../src/types";

const report = (r: Partial<IndexReport>): IndexReport => ({
  repo: "r",
  plain_folder: false,
  files_indexed: 0,
  files_unchanged: 0,
  files_removed: 0,
  files_skipped: {},
  commits_added: 0,
  refs: 0,
  issues: 0,
  pull_requests: 0,
  comments: 0,
  orphan_comments: 0,
  elapsed_ms: 12,
  warnings: [],
  ...r,
});

describe("reportSummary", () => {
  it("says what a folder's indexing did", () => {
    expect(reportSummary(report({ files_indexed: 2, commits_added: 1 }))).toBe("2 files indexed, 1 commit in 12 ms");
    expect(reportSummary(report({ files_indexed: 1, files_unchanged: 40, files_removed: 3 }))).toBe(
      "1 file indexed, 40 unchanged, 3 removed in 12 ms",
    );
  });

  it("says what an import brought, without a row of zero files", () => {
    expect(reportSummary(report({ issues: 1, pull_requests: 2, comments: 5, elapsed_ms: 12_500 }))).toBe(
      "1 issue, 2 pull requests, 5 comments in 12.5 s",
    );
  });

  it("says that nothing changed rather than nothing", () => {
    expect(reportSummary(report({}))).toBe("0 files indexed in 12 ms");
  });
});

describe("plural", () => {
  it("counts", () => {
    expect(plural(1, "issue")).toBe("1 issue");
    expect(plural(0, "issue")).toBe("0 issues");
    expect(plural(3, "entry", "entries")).toBe("3 entries");
  });
});

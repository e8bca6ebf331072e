import { describe as suite, expect, it } from "vitest";
import { describe } from "../src/links";

suite("describe", () => {
  it("names each kind of item as a link shows it", () => {
    expect(describe({ kind: "file", path: "src/qt/walletview.cpp", line: 120, repo: "gui" })).toBe(
      "src/qt/walletview.cpp:120",
    );
    expect(describe({ kind: "file", path: "README.md", line: null, repo: null })).toBe("README.md");
    expect(describe({ kind: "issue", number: 42, repo: null })).toBe("#42");
    expect(describe({ kind: "pull_request", number: 7, repo: "acme/app" })).toBe("pull request #7");
    expect(describe({ kind: "commit", hash: "0123456789abcdef0123456789abcdef01234567", repo: null })).toBe(
      "commit 0123456789ab",
    );
  });
});

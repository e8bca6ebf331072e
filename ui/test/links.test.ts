import { describe, expect, it } from "vitest";
import { linkify } from "../src/links";

const items = (text: string) => linkify(text).filter((s) => s.item).map((s) => s.item);

describe("linkify", () => {
  it("finds file:line, issues, pull requests and commits, and keeps every character", () => {
    const text =
      "See src/qt/walletview.cpp:120 and #42; PR #7 fixed it in 3f2a9c1d, cf. pull request #8.";
    const segs = linkify(text, "gui");
    expect(segs.map((s) => s.text).join("")).toBe(text);
    expect(items(text)).toEqual([
      { kind: "file", path: "src/qt/walletview.cpp", line: 120, repo: null },
      { kind: "issue", number: 42, repo: null },
      { kind: "pull_request", number: 7, repo: null },
      { kind: "commit", hash: "3f2a9c1d", repo: null },
      { kind: "pull_request", number: 8, repo: null },
    ]);
    expect(segs.find((s) => s.item)?.item).toMatchObject({ repo: "gui" });
  });

  it("reads grep output lines (path:line: text)", () => {
    expect(items("README.md:3: A wallet parser.\nsrc/lib.rs:1: /// Parses")).toEqual([
      { kind: "file", path: "README.md", line: 3, repo: null },
      { kind: "file", path: "src/lib.rs", line: 1, repo: null },
    ]);
  });

  it("leaves words, plain numbers, times, URLs' anchors and HTML entities alone", () => {
    expect(items("deadbeef is a word, 1234567 a number, at 12:30, a&#39;b, x#1")).toEqual([]);
    expect(items("version 1.2:3 and color #fff")).toEqual([]);
  });

  it("takes a full 40-digit hash whole", () => {
    const h = "0123456789abcdef0123456789abcdef01234567";
    expect(items(`commit ${h}`)).toEqual([{ kind: "commit", hash: h, repo: null }]);
  });

  it("never turns markup into anything but text", () => {
    const segs = linkify('<img src=x onerror="alert(1)"> #5');
    expect(segs[0]).toEqual({ text: '<img src=x onerror="alert(1)"> ' });
  });
});

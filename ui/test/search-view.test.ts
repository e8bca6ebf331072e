import { describe, expect, it } from "vitest";
import { h } from "../src/dom";
import { highlight } from "../src/search-view";

/// The snippet as the page shows it: its HTML, built from what `highlight` returns.
const shown = (snippet: string): string => h("pre", null, highlight(snippet)).innerHTML;

describe("search snippets", () => {
  it("marks each span the search put between « and »", () => {
    expect(shown("/// Parses the «wallet» «file».")).toBe("/// Parses the <mark>wallet</mark> <mark>file</mark>.");
  });

  it("keeps workspace text as text, whatever it holds", () => {
    // Issue bodies and file text are untrusted: markup in them is shown, never parsed.
    const html = shown('<img src=x onerror="alert(1)"> «<b>x</b>»');
    expect(html).toBe('&lt;img src=x onerror="alert(1)"&gt; <mark>&lt;b&gt;x&lt;/b&gt;</mark>');
    const pre = h("pre", null, highlight("<script>«x»</script>"));
    expect(pre.querySelector("script, img, b")).toBeNull();
  });

  it("runs a mark left open to the end, and shows a stray » as text", () => {
    expect(shown("a «b c")).toBe("a <mark>b c</mark>");
    expect(shown("a » b «c» d")).toBe("a » b <mark>c</mark> d");
    expect(shown("«»x")).toBe("x");
    expect(shown("")).toBe("");
  });
});

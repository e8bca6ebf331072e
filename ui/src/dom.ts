// A small element builder. Text always goes in as text nodes: workspace data (file text, issue
// bodies, model output) is untrusted and is never parsed as HTML.

import type { IndexReport } from "./types";

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") {
        el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
      } else if (k === "class") {
        el.className = String(v);
      } else if (v === true) {
        el.setAttribute(k, "");
      } else {
        el.setAttribute(k, String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

export function replaceChildren(el: Element, ...children: (Child | Child[])[]): void {
  el.textContent = "";
  append(el, children);
}

/// Notes where focus is inside `el` before a redraw; `restore()` puts it back after. A redraw
/// that keeps an element (a model's settings form) moves it into new parents, and moving it
/// drops its focus: the keys typed next would land nowhere, while a load's progress redraws the
/// Models screen many times a second. The caret goes back too where the input has one.
export function saveFocus(el: Element): { restore(): void } {
  const focused = document.activeElement;
  const kept = focused instanceof HTMLElement && focused !== el && el.contains(focused) ? focused : null;
  const caret = kept ? caretOf(kept) : null;
  return {
    restore() {
      if (!kept || !kept.isConnected || document.activeElement === kept) return;
      kept.focus({ preventScroll: true });
      if (caret && (kept instanceof HTMLInputElement || kept instanceof HTMLTextAreaElement)) {
        kept.setSelectionRange(caret[0], caret[1], caret[2]);
      }
    },
  };
}

function caretOf(el: HTMLElement): [number, number, "forward" | "backward" | "none"] | null {
  if (!(el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)) return null;
  // Number inputs and the like have no selection API: null here, a throw on setting.
  try {
    if (el.selectionStart === null || el.selectionEnd === null) return null;
    return [el.selectionStart, el.selectionEnd, el.selectionDirection ?? "none"];
  } catch {
    return null;
  }
}

export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}

export function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

export function formatTime(unixSeconds: number | null): string {
  if (unixSeconds === null) return "";
  return new Date(unixSeconds * 1000).toLocaleString();
}

export function progressBar(done: number, total: number, label: string): HTMLElement {
  const bar = h("progress", { max: total > 0 ? total : 1, "aria-label": label });
  bar.value = total > 0 ? Math.min(done, total) : 0;
  if (total <= 0) bar.removeAttribute("value"); // indeterminate until the total is known
  return bar;
}

/// "1 issue", "2 issues".
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/// What an indexing or import job did, in one line: what it touched, not a row of zeros (an
/// issues import says nothing of files, a folder nothing of issues).
export function reportSummary(r: IndexReport): string {
  const parts: string[] = [];
  const imported = r.issues + r.pull_requests + r.comments > 0;
  if (r.files_indexed + r.files_unchanged + r.files_removed > 0 || !imported) {
    parts.push(`${plural(r.files_indexed, "file")} indexed`);
    if (r.files_unchanged) parts.push(`${r.files_unchanged} unchanged`);
    if (r.files_removed) parts.push(`${r.files_removed} removed`);
  }
  if (r.commits_added) parts.push(plural(r.commits_added, "commit"));
  if (r.commits_removed) parts.push(`${plural(r.commits_removed, "commit")} no branch reaches removed`);
  if (r.issues) parts.push(plural(r.issues, "issue"));
  if (r.pull_requests) parts.push(plural(r.pull_requests, "pull request"));
  if (r.comments) parts.push(plural(r.comments, "comment"));
  if (r.comments_deleted) parts.push(`${plural(r.comments_deleted, "comment")} deleted`);
  return `${parts.join(", ")} in ${formatMs(r.elapsed_ms)}`;
}

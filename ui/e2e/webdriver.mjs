// Plain WebDriver over fetch (HTTP + JSON, no client library), for driving the real app through
// tauri-driver in front of WebKitWebDriver. Shared by the end-to-end tests (run.mjs) and the UI
// benchmarks (bench.mjs, bench-decode.mjs).

import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

/// The app processes started on the Burrow home `home` (by their command lines).
export function appProcesses(home) {
  const pids = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (args.includes(home) && args[0].endsWith("burrow-app")) pids.push(pid);
    } catch {
      // gone between the listing and the read
    }
  }
  return pids;
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// Starts tauri-driver on `port` and waits until it answers. `env` adds to the environment
/// the app is started with (the driver passes its own on).
export async function startDriver({ driver = process.env.TAURI_DRIVER ?? "tauri-driver", port = 4444, env = {}, cwd } = {}) {
  const launch = () =>
    spawn(driver, ["--port", String(port), "--native-driver", "/usr/bin/WebKitWebDriver"], {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, ...env },
      cwd,
    });
  let proc = launch();
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0, launches = 1; ; i++) {
    try {
      await fetch(`${base}/status`);
      break;
    } catch {
      // A driver that exits at once found its port still held (by the previous one, still
      // stopping: "can not listen to address"): launched again a little later. One that never
      // answers is stopped, so that it holds no port for the next.
      if (proc.exitCode !== null && launches < 20) {
        await sleep(500);
        proc = launch();
        launches++;
        continue;
      }
      if (i > 100 || proc.exitCode !== null) {
        proc.kill();
        throw new Error(`tauri-driver did not start on port ${port} (${launches} launches)`);
      }
      await sleep(100);
    }
  }
  return {
    base,
    /// Stops the driver and waits for it (and the app it started) to be gone.
    async stop() {
      if (proc.exitCode !== null) return;
      const gone = new Promise((r) => proc.once("exit", r));
      proc.kill();
      await Promise.race([gone, sleep(5000)]);
    },
  };
}

async function call(base, method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.value ?? json)}`);
  return json.value;
}

// WebKitGTK under Xvfb answers a screenshot only after its next paint, and a page with nothing
// changing never paints again (seen: a screenshot waits forever unless a caret blinks). A
// 1-pixel animated element, there only while the screenshot is taken, keeps frames coming.
const TICK_ON =
  "const t = document.createElement('div'); t.id = 'e2e-tick'; t.style.cssText = 'position:fixed;right:0;bottom:0;width:1px;height:1px;opacity:0.01'; document.body.append(t); let n = 0; (function f(){ if (!t.isConnected) return; t.style.opacity = String(0.01 + (n++ % 2) * 0.01); requestAnimationFrame(f); })();";
const TICK_OFF = "document.getElementById('e2e-tick')?.remove();";

/// A session: the app started with `args`; `ms` is how long the session request took.
export async function openSession(driver, app, args) {
  const created = await call(driver.base, "POST", "/session", {
    capabilities: { alwaysMatch: { "tauri:options": { application: app, args } } },
  });
  return new Session(driver.base, created.sessionId);
}

export class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  wd(method, path, body) {
    return call(this.base, method, `/session/${this.id}${path}`, body);
  }

  async find(css) {
    const ref = await this.wd("POST", "/element", { using: "css selector", value: css });
    const id = ref?.[ELEMENT] ?? Object.values(ref ?? {})[0];
    if (typeof id !== "string") throw new Error(`no element ${css}: ${JSON.stringify(ref)}`);
    return id;
  }

  /// Finds `css` and acts on it, finding it again when the page redrew it in between (screens
  /// are rebuilt on events, so an element found a moment ago can be gone).
  async withElement(css, act) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await act(await this.find(css));
      } catch (e) {
        if (attempt >= 5 || !String(e).includes("stale element")) throw e;
        await sleep(100);
      }
    }
  }

  /// Clicks `css` once it has stopped moving: the page redraws on events at its next frame, and
  /// a redraw that shifts the layout (an error box appearing above) between WebDriver's hit test
  /// and its click sends the click elsewhere, without an error.
  click(css) {
    return this.withElement(css, async (el) => {
      await this.settled(el);
      return this.wd("POST", `/element/${el}/click`, {});
    });
  }

  /// Waits until `el` has the same box on two looks a few frames apart (for at most a second).
  async settled(el) {
    let last = null;
    for (let i = 0; i < 20; i++) {
      const box = await this.exec("const r = arguments[0].getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join(',');", [{ [ELEMENT]: el }]);
      if (box === last) return;
      last = box;
      await sleep(50);
    }
  }

  /// Replaces an input's text.
  type(css, text) {
    return this.withElement(css, async (el) => {
      await this.wd("POST", `/element/${el}/clear`, {});
      await this.wd("POST", `/element/${el}/value`, { text });
    });
  }

  /// Sends keys to an element (\uE007 is Enter, \uE00C Escape).
  keys(css, text) {
    return this.withElement(css, (el) => this.wd("POST", `/element/${el}/value`, { text }));
  }

  exec(script, args = []) {
    return this.wd("POST", "/execute/sync", { script, args });
  }

  text(css) {
    return this.exec("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", [css]);
  }

  /// Polls `script` (which returns a value, or null/false while not yet) until it returns one.
  async until(what, script, args = [], timeoutMs = 120_000, intervalMs = 150) {
    const start = Date.now();
    let last;
    for (;;) {
      try {
        last = await this.exec(script, args);
        if (last !== null && last !== false && last !== undefined) return last;
      } catch (e) {
        last = String(e);
      }
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
      await sleep(intervalMs);
    }
  }

  async screenshot(file) {
    await this.exec(TICK_ON);
    const png = await this.wd("GET", "/screenshot").finally(() => this.exec(TICK_OFF));
    writeFileSync(file, Buffer.from(png, "base64"));
  }

  /// Closes the app's window, as a person does: the app exits by itself.
  closeWindow() {
    return call(this.base, "DELETE", `/session/${this.id}/window`);
  }
  /// Ends the session: the driver closes the app.
  close() {
    return call(this.base, "DELETE", `/session/${this.id}`);
  }
}

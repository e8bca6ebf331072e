// The app's entry point: wires the frame loop (loop.ts) to the redraw (render.ts) and to the
// lists a frame's events make stale, each screen's work when shown to the layout (shell.ts),
// and starts the page. Events from the shell are queued and applied once per animation frame
// (however fast tokens arrive, each frame reduces all of them and redraws once, and none is
// dropped).

import "./style.css";
import { api } from "./api";
import { dispatch, recordFlushes, redraw, setCoalesce, update, wire } from "./loop";
import { render } from "./render";
import { refreshRuns } from "./screens/history";
import { refreshModels, showModels } from "./screens/models";
import { focusTask, timeline } from "./screens/run";
import { showSearch } from "./screens/search";
import { refreshSettings } from "./screens/settings";
import { refreshRepos } from "./screens/workspace";
import { attempt, onShow, renderNav, show } from "./shell";

wire({
  redraw: render,
  reduced: (events) => {
    // Lists the events changed are read again from the core.
    if (events.some((e) => e.kind === "indexed" || e.kind === "index_failed")) void refreshRepos();
    if (events.some((e) => e.kind === "run_ended")) void refreshRuns();
    // A downloaded model is listed with the others, ready to load.
    if (events.some((e) => e.kind === "fetched")) void refreshModels();
  },
});

onShow("models", showModels);
onShow("workspace", () => void refreshRepos());
onShow("history", () => void refreshRuns());
onShow("settings", () => void refreshSettings());
onShow("run", focusTask);
onShow("search", showSearch);

async function start(): Promise<void> {
  renderNav();
  show("run");
  redraw();
  update({ kind: "ui_info", info: (await attempt("Starting", () => api.appInfo())) ?? null });
  redraw();
  document.body.dataset.ready = "1";
  // The default workspace and model: started once per process, streamed here.
  await attempt("Starting", () => api.startup(dispatch));
}

void start();

// The UI benchmark (scripts/bench-ui.sh) opens the page with ?bench; nothing of it is loaded
// otherwise.
if (new URLSearchParams(location.search).has("bench")) {
  void import("./bench").then((b) =>
    b.install({
      dispatch,
      setCoalesce,
      reset: () => {
        update({ kind: "ui_clear_run" });
        redraw();
      },
      builds: () => timeline.builds,
      recordFlushes,
    }),
  );
}

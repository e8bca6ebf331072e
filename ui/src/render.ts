// The redraw after a frame's events or an action that changed the run or the model: the status
// pills and the Run screen each time, the Models screen (when shown: the model in use, loads and
// downloads), the indexing jobs and the embedding pass only
// when their part of the state changed since the last redraw.

import { getState } from "./loop";
import { renderModels } from "./screens/models";
import { renderRun } from "./screens/run";
import { renderEmbedding, renderIndexing } from "./screens/workspace";
import { renderStatus } from "./shell";
import { isLive, type State } from "./state";

/// The parts last drawn (a render cache, not state: only what changed since is drawn again).
let renderedModel: State["model"] | undefined;
/// Whether a run was live at the last redraw: the Models screen's buttons are disabled while
/// one is, and stayed disabled after it ended until the screen was left.
let renderedLive: boolean | undefined;
let renderedFetches: State["fetches"] | undefined;
let renderedIndexing: State["indexing"] | undefined;
let renderedEmbedding: State["embedding"] | undefined;

export function render(): void {
  const state = getState();
  renderStatus();
  renderRun();
  const live = isLive(state.run);
  if (state.model !== renderedModel || state.fetches !== renderedFetches || live !== renderedLive) {
    renderedModel = state.model;
    renderedFetches = state.fetches;
    renderedLive = live;
    if (state.screen === "models") renderModels();
  }
  if (state.indexing !== renderedIndexing) {
    renderedIndexing = state.indexing;
    renderIndexing();
  }
  if (state.embedding !== renderedEmbedding) {
    renderedEmbedding = state.embedding;
    renderEmbedding();
  }
}

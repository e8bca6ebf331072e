#!/usr/bin/env bash
# The end-to-end tests: builds the UI and the app (debug), then drives the real app under Xvfb
# through tauri-driver and WebKitWebDriver (ui/e2e/run.mjs). Screenshots and results.json land
# in ui/test-results/e2e/. Needs `scripts/setup.sh --test` first.
set -euo pipefail
source "$(dirname "$0")/webview-env.sh"
rm -rf ui/test-results/e2e
run_in_webview ui/e2e/run.mjs

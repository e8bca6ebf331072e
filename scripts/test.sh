#!/usr/bin/env bash
# Every test: set up (packages, toolchain check, default model), then formatting, lints, and the
# unit and integration tests, which run the real default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
say() { echo "[test] $*" >&2; }
say "formatting (cargo fmt --check)"
cargo fmt --all -- --check
say "lints (cargo clippy; the first build compiles llama.cpp and takes several minutes)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
say "unit and integration tests"
cargo test --workspace --quiet
say "all tests passed"

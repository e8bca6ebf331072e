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

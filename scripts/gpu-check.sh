#!/usr/bin/env bash
# The GPU executor's checks (docs/gpu.md), in two halves, since the machine
# with the GPU need not have Go:
#
#   scripts/gpu-check.sh build [DIR]   # here, with Go: test binaries and a stripped
#                                      # glassbox (CGO_ENABLED=0) into DIR (default .gpu)
#   bash DIR/run.sh                    # there, from the repo root, with OUT set (default
#                                      # ./gpu-out): every GPU test under GLASSBOX_REQUIRE_GPU=1,
#                                      # model bench against the H200 reference, a serve smoke
#                                      # (with --dcgm-port, the doctor on it, a profile's kernels)
#
# run.sh is this script; it needs bash, timeout, xz, gzip and curl or python3, NVIDIA's
# driver and cuBLASLt ($GLASSBOX_CUBLAS, else the usual places). It makes the
# random Qwen2.5-0.5B-shaped F16 model itself (1 GB) and carries stories260K (1 MB).
# Every program runs under timeout; the whole run takes about three minutes.
set -uo pipefail

build() {
  set -e
  cd "$(dirname "$0")/.."
  local dir=${1:-.gpu}
  mkdir -p "$dir"
  export CGO_ENABLED=0
  go test -c -ldflags='-s -w' -o "$dir/cuda.test" ./internal/cuda
  go test -c -ldflags='-s -w' -o "$dir/executor.test" ./internal/executor/cuda
  go build -trimpath -ldflags='-s -w' -o "$dir/glassbox" ./cmd/glassbox
  xz -T0 -f -6 "$dir/glassbox"
  cp ../shared/models/stories260K/stories260K.gguf "$dir/"
  cp "$0" "$dir/run.sh"
  du -sh "$dir"
}

run() {
  local G LOG SUM start
  G=$(cd "$(dirname "$0")" && pwd)
  OUT=${OUT:-./gpu-out}
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  LOG=$OUT/run.log
  SUM=$OUT/summary.md
  local W=/tmp/glassbox-gpu-check
  mkdir -p "$W"
  start=$(date +%s)
  exec > >(tee -a "$LOG") 2>&1
  echo "== machine"
  uname -a
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv 2>&1 | head -3
  ls /usr/local/cuda*/targets/*/lib/libcublasLt.so* 2>/dev/null | head -3
  chmod +x "$G"/*.test
  [ -f "$G/glassbox.xz" ] && xz -dkf "$G/glassbox.xz" -c > "$W/glassbox" && chmod +x "$W/glassbox"
  cp "$G/stories260K.gguf" "$W/" 2>/dev/null
  export GLASSBOX_REQUIRE_GPU=1 GLASSBOX_GPU_MODELS=$W
  local status=()
  local budget=${BUDGET:-220} # seconds: later steps are skipped past it
  step() { # name seconds command...
    local name=$1 t=$2
    shift 2
    local left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 10 ]; then
      status+=("$name: SKIPPED, the run's budget is spent")
      return 1
    fi
    [ "$t" -gt "$left" ] && t=$left
    echo "== $name"
    local t0
    t0=$(date +%s)
    timeout -k 5 "$t" "$@"
    local rc=$?
    status+=("$name: rc=$rc in $(($(date +%s) - t0)) s")
    return $rc
  }
  step "make the random Qwen2.5-0.5B F16 model" 45 "$W/glassbox" model random -shape qwen2.5-0.5b -type f16 -o "$W/qwen2.5-0.5b-f16.gguf"
  step "driver, cuBLASLt, NVML tests" 30 "$G/cuda.test" -test.v -test.timeout 28s > "$OUT/cuda.log" 2>&1
  step "executor tests (kernels, GEMMs, whole models, engine)" 120 "$G/executor.test" -test.v -test.timeout 115s > "$OUT/executor.log" 2>&1
  : > "$OUT/bench.txt"
  for args in "-p 2048 -n 0" "-p 0 -n 32 -b 1 -d 2048" "-p 0 -n 32 -b 64 -d 2048"; do
    # shellcheck disable=SC2086
    step "model bench $args" 45 "$W/glassbox" model bench -device cuda -shape llama-3.1-8b -type bf16 -r 3 $args >> "$OUT/bench.txt" 2>&1
  done
  if [ $(($(date +%s) - start)) -lt "$budget" ]; then
    serve_smoke > "$OUT/serve.log" 2>&1 # bounded inside: curl --max-time, the server killed
    status+=("serve smoke: rc=$?")
  fi
  {
    echo "# glassbox GPU check"
    echo
    echo "wall: $(($(date +%s) - start)) s"
    echo
    for s in "${status[@]}"; do echo "- $s"; done
    echo
    echo '## tests'
    echo '```'
    grep -hE '^(--- (PASS|FAIL|SKIP)|    --- (PASS|FAIL|SKIP)|ok|FAIL|PASS$)' "$OUT/cuda.log" "$OUT/executor.log" | head -150
    echo '```'
    echo '## model bench (Llama-3.1-8B shape, random bf16; H200 reference: decode b1 5.0 ms, b64 @ 2048 9.5 ms, prefill 2048 52.6 ms a step)'
    echo '```'
    cat "$OUT/bench.txt"
    echo '```'
    echo '## serve'
    echo '```'
    head -40 "$OUT/serve.log"
    echo '```'
    echo '## measurements'
    echo '```'
    grep -hE '_test\.go:[0-9]+: ' "$OUT/cuda.log" "$OUT/executor.log" | sed 's/^ *//' | head -250
    echo '```'
  } > "$SUM"
  echo "== summary"
  head -40 "$SUM"
}

# serve_smoke starts glassbox serve on stories260K on the GPU, asks for a
# completion and reads /metrics.
serve_smoke() {
  local W=/tmp/glassbox-gpu-check port=18765 pid
  rm -rf "$W/prof"
  timeout 60 "$W/glassbox" serve --model "$W/stories260K.gguf" --device cuda --kv-cache-memory-bytes 256M --port $port --host 127.0.0.1 \
    --dcgm-port $((port + 1)) --dcgm-interval 500ms --profiler-dir "$W/prof" &
  pid=$!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.2
  done
  echo "== completion"
  curl -s --max-time 20 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"'"$W"'/stories260K.gguf","prompt":"Once upon a time","max_tokens":32,"temperature":0}'
  echo
  curl -s --max-time 20 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"'"$W"'/stories260K.gguf","prompt":"Once upon a time","max_tokens":16,"temperature":0.8,"top_p":0.9,"seed":7,"logprobs":2}' | head -c 600
  echo
  echo "== metrics"
  curl -s --max-time 20 "http://127.0.0.1:$port/metrics" | grep -E '^(vllm:(generation_tokens_total|prompt_tokens_total|kv_cache_usage_perc|num_requests_running)|glassbox_executor_(busy_seconds_total|info)|vllm:cache_config_info)' | head -20
  echo "== dcgm-exporter from NVML (--dcgm-port)"
  curl -s --max-time 10 "http://127.0.0.1:$((port + 1))/metrics" | grep -v '^#' | head -30
  echo "== doctor on the GPU's counters (3 s, idle)"
  timeout 20 "$W/glassbox" doctor --metrics-url "http://127.0.0.1:$port/metrics" --dcgm-url "http://127.0.0.1:$((port + 1))/metrics" \
    --duration 3s --interval 1s 2>&1 | head -30
  echo "== kernel timeline (/start_profile … /stop_profile)"
  curl -s --max-time 10 -X POST "http://127.0.0.1:$port/start_profile"
  curl -s --max-time 20 "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"'"$W"'/stories260K.gguf","prompt":"Once upon a time","max_tokens":8,"temperature":0}' >/dev/null
  curl -s --max-time 20 -X POST "http://127.0.0.1:$port/stop_profile"
  gzip -dc "$W"/prof/*.trace.json.gz | grep -o '"name":"[^"]*","cat":"kernel"' | sort | uniq -c | sort -rn | head -30
  kill -TERM $pid 2>/dev/null
  wait $pid
  echo "serve exited with $?"
}

case ${1:-run} in
build) shift; build "$@" ;;
run) run ;;
*) echo "usage: $0 build [DIR] | run" >&2; exit 2 ;;
esac

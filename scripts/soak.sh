#!/usr/bin/env bash
# The soak of docs/reliability.md: glassbox serve (the simulated H200,
# --max-num-seqs 256) under streaming chats from 64 clients at once, a tenth
# of them cut mid-stream with a TCP reset and one in twenty malformed, for
# DURATION (default 1h), with the server's memory, goroutines and latencies
# read every 30 s; then the chaos reconciliation. Writes OUT/soak.html and
# OUT/soak.json (default OUT=./soak-out).
#
#   scripts/soak.sh 1h ./soak-out
#
# Point BASE_URL at another server (a vLLM one) to soak it instead; the
# script then starts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-1h}
out=${2:-./soak-out}
mkdir -p "$out"
bin=$(mktemp -d)/glassbox
go build -o "$bin" ./cmd/glassbox
if [ -z "${BASE_URL:-}" ]; then
  port=${PORT:-18080}
  while (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; do port=$((port + 1)); done # the first free port
  "$bin" serve --port "$port" --max-num-seqs 256 --log-level warn &
  server=$!
  trap 'kill -TERM $server 2>/dev/null; wait $server; echo "serve exited with $?"' EXIT
  BASE_URL=http://127.0.0.1:$port
  for _ in $(seq 100); do curl -fs "$BASE_URL/health" >/dev/null && break; sleep 0.2; done
fi
"$bin" bench --base-url "$BASE_URL" --backend openai-chat --dataset-name random --random-input-len 256 --random-output-len 128 \
  --max-concurrency 64 --request-rate inf --duration "$duration" --num-prompts 2000 --request-timeout 2m \
  --soak --metrics-interval 30s --chaos cut=0.1,reset=1,malformed=0.05 \
  --save-result --result-dir "$out" --result-filename soak.json --html-report "$out/soak.html" --disable-tqdm

#!/usr/bin/env bash
# Speculative decoding side by side with llama.cpp: batch-1 decode on the
# same GGUF files, the same threads and the same client, in one run.
#
#   scripts/compare-spec-llamacpp.sh LLAMA_CPP_BIN_DIR [WORKDIR]
#
# LLAMA_CPP_BIN_DIR holds llama-server and llama-lookup (llama.cpp c392e50,
# built as ../shared/reference/cpu-inference.md §2 says). No real model can
# be downloaded here, so the script makes a pair with `glassbox model
# random`: a TinyLlama-1.1B-shaped Q8_0 target whose layers after the first
# are quiet (-quiet-from 1 -quiet $QUIET), and its draft, the target's first layer with
# the same embeddings and head (-layers 1, the same seed): a draft that
# agrees with its target, a tenth of its weights. A second draft of another
# seed disagrees with it (the workload where drafts are refused).
#
# Each server answers the same prompts through `glassbox bench` (custom
# dataset, one request at a time, greedy, ignore_eos, N output tokens);
# decode tok/s is 1000 / median TPOT. Runs:
#   glassbox plain, ngram (k 4, n-grams 2-4), draft model (k 4);
#   llama-server plain;
#   llama-speculative with each draft (--draft-max 4 --draft-min 0
#   --draft-p-min 0: llama.cpp's default p-min of 0.8 drafts nothing on
#   random weights, whose draft is never that sure) and llama-lookup
#   (llama.cpp's prompt-lookup decoding, --draft-max 4), which print their
#   own decode speed and acceptance (median of REPS runs). llama-server
#   -md gave decode speeds that varied twentyfold between identical
#   requests here, so its draft mode is not used.
# 2-core machines are noisy: compare within one run, and run it more than
# once.
set -euo pipefail
BIN=${1:?usage: $0 LLAMA_CPP_BIN_DIR [workdir]}
WORK=${2:-$(mktemp -d)}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
N=${N:-128}
SHAPE=${SHAPE:-tinyllama-1.1b}
QUIET=${QUIET:-0.002} # 0.05 left TinyLlama's target disagreeing with its draft on 70 % of drafts
cd "$(dirname "$0")/.."
mkdir -p "$WORK"
grep -m1 'model name' /proc/cpuinfo || true
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512_vnni)$' | sort | tr '\n' ' ')
echo "ISA: ${isa:-unknown}; $(nproc) cores; $THREADS threads"
go build -o "$WORK/glassbox" ./cmd/glassbox
GB="$WORK/glassbox"
T="$WORK/$SHAPE-target.gguf" D="$WORK/$SHAPE-draft.gguf" X="$WORK/$SHAPE-other-draft.gguf"
[ -f "$T" ] || $GB model random --shape "$SHAPE" --type q8_0 --seed 5 --quiet-from 1 --quiet "$QUIET" -o "$T"
[ -f "$D" ] || $GB model random --shape "$SHAPE" --type q8_0 --seed 5 --layers 1 -o "$D"
[ -f "$X" ] || $GB model random --shape "$SHAPE" --type q8_0 --seed 6 --layers 1 -o "$X"

# The prompts: a passage said twice and begun again (its continuation
# repeats it: what prompt lookup is for).
passage="the old lighthouse keeper climbed the stairs every evening to light the lamp for the ships"
prompt="$passage. $passage. the old lighthouse"
for i in $(seq "$REPS"); do printf '{"prompt": "%s"}\n' "$prompt"; done >"$WORK/prompts.jsonl"

PORT=18631
wait_up() {
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "server on $PORT did not come up" >&2
  return 1
}
measure() { # name: bench the server on $PORT, print decode tok/s
  local name=$1
  $GB bench --backend openai --base-url "http://127.0.0.1:$PORT" --model target --dataset-name custom \
    --dataset-path "$WORK/prompts.jsonl" --num-prompts "$REPS" --custom-output-len "$N" --ignore-eos --temperature 0 \
    --max-concurrency 1 --metrics-url - --save-result --result-dir "$WORK" --result-filename "$name.json" >"$WORK/$name.log" 2>&1
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.1f" % (1000/r["median_tpot_ms"]))' "$WORK/$name.json"
}
run_server() { # name command...: start it, measure, stop it
  local name=$1
  shift
  "$@" >"$WORK/$name.server.log" 2>&1 &
  local pid=$!
  wait_up
  local tps
  tps=$(measure "$name")
  curl -s "http://127.0.0.1:$PORT/metrics" >"$WORK/$name.metrics" 2>/dev/null || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$tps"
}

declare -A R
R[gb_plain]=$(run_server gb_plain $GB serve --model "$T" --served-model-name target --port $PORT --threads "$THREADS" --max-num-seqs 1)
R[gb_ngram]=$(run_server gb_ngram $GB serve --model "$T" --served-model-name target --port $PORT --threads "$THREADS" --max-num-seqs 1 \
  --speculative-config '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":4}')
R[gb_draft]=$(run_server gb_draft $GB serve --model "$T" --served-model-name target --port $PORT --threads "$THREADS" --max-num-seqs 1 \
  --speculative-config "{\"model\":\"$D\",\"num_speculative_tokens\":4}")
R[gb_other]=$(run_server gb_other $GB serve --model "$T" --served-model-name target --port $PORT --threads "$THREADS" --max-num-seqs 1 \
  --speculative-config "{\"model\":\"$X\",\"num_speculative_tokens\":4}")
LS="$BIN/llama-server"
R[ll_plain]=$(run_server ll_plain "$LS" -m "$T" --port $PORT -t "$THREADS" -np 1 -c 2048)
cli() { # name binary args...: REPS runs of a llama.cpp example; median decode tok/s, last acceptance
  local name=$1 bin=$2
  shift 2
  local speeds=()
  for _ in $(seq "$REPS"); do
    "$BIN/$bin" -m "$T" -p "$prompt" -n "$N" -t "$THREADS" --temp 0 --ignore-eos -c 2048 "$@" >"$WORK/$name.log" 2>&1 || true
    speeds+=("$(grep -oE 'decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+' "$WORK/$name.log" | grep -oE '[0-9.]+$' || echo nan)")
  done
  R[$name]=$(printf '%s\n' "${speeds[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  A[$name]=$(grep -oE 'accept += +[0-9.]+%' "$WORK/$name.log" | grep -oE '[0-9.]+%' || echo -)
}
declare -A A
cli ll_lookup llama-lookup --draft-max 4
cli ll_draft llama-speculative -md "$D" --draft-max 4 --draft-min 0 --draft-p-min 0
cli ll_other llama-speculative -md "$X" --draft-max 4 --draft-min 0 --draft-p-min 0

acc() { # glassbox's acceptance: accepted / draft tokens in its /metrics after the run
  awk '/^vllm:spec_decode_num_accepted_tokens_total/ {a=$NF} /^vllm:spec_decode_num_draft_tokens_total/ {d=$NF}
    END {if (d > 0) printf "%.2f", a/d; else printf "-"}' "$WORK/$1.metrics"
}
echo
echo "| mode | glassbox tok/s | llama.cpp tok/s | glassbox / llama.cpp | glassbox / its plain | llama.cpp / its plain | acceptance: glassbox / llama.cpp |"
echo "|---|---|---|---|---|---|---|"
ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}×')" "$1" "$2"; }
echo "| plain | ${R[gb_plain]} | ${R[ll_plain]} (llama-server) | $(ratio "${R[gb_plain]}" "${R[ll_plain]}") | 1.00× | 1.00× | - |"
echo "| prompt lookup (k 4) | ${R[gb_ngram]} | ${R[ll_lookup]} (llama-lookup) | $(ratio "${R[gb_ngram]}" "${R[ll_lookup]}") | $(ratio "${R[gb_ngram]}" "${R[gb_plain]}") | $(ratio "${R[ll_lookup]}" "${R[ll_plain]}") | $(acc gb_ngram) / ${A[ll_lookup]} |"
echo "| draft model that agrees (k 4) | ${R[gb_draft]} | ${R[ll_draft]} (llama-speculative) | $(ratio "${R[gb_draft]}" "${R[ll_draft]}") | $(ratio "${R[gb_draft]}" "${R[gb_plain]}") | $(ratio "${R[ll_draft]}" "${R[ll_plain]}") | $(acc gb_draft) / ${A[ll_draft]} |"
echo "| draft model that disagrees (k 4) | ${R[gb_other]} | ${R[ll_other]} (llama-speculative) | $(ratio "${R[gb_other]}" "${R[ll_other]}") | $(ratio "${R[gb_other]}" "${R[gb_plain]}") | $(ratio "${R[ll_other]}" "${R[ll_plain]}") | $(acc gb_other) / ${A[ll_other]} |"
echo "results and logs: $WORK"

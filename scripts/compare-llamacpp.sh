#!/usr/bin/env bash
# Side-by-side CPU comparison of glassbox and llama.cpp on the same machine,
# the same GGUF files and the same thread count (issue 4's table).
#
#   scripts/compare-llamacpp.sh PATH/TO/llama-bench PATH/TO/llama-server [WORKDIR]
#
# llama.cpp is not part of glassbox: build your own (cmake -B build &&
# cmake --build build -j) and pass its binaries. The script makes the
# models with `glassbox model random` (Qwen2.5-0.5B-shaped Q8_0 and
# TinyLlama-1.1B-shaped Q4_K_M), then runs, back to back:
#   - llama-bench -p 512 -n 128 -r 3 against `glassbox model bench` (same
#     test definitions), min and median of the repetitions;
#   - long context on the Qwen model: llama-bench -p 4000 -pg 4000,128
#     (decode at depth is 128 tokens over the difference of the two runs'
#     median times; c392e50 has no -d) against `glassbox model bench -p
#     4000` and `-n 128 -d 4000`;
#   - 1, 2, 4 and 32 concurrent streaming requests (128 tokens each) with
#     `glassbox bench` against `llama-server -np N` and `glassbox serve`;
#   - decode's achieved memory traffic (weights and K/V read per token ×
#     tokens/s) against the machine's read ceiling, which `model bench
#     -read-bandwidth` measures beside the test (a STREAM-like sum).
# It prints the CPU's model and ISA first: AVX2-only and AVX-512 VNNI
# machines give very different answers. Both sides use fp16 K/V.
# FORMATS=all runs the matrix of every weight format instead (below).
# Machines with 2 cores are noisy: run it on an otherwise idle machine, and
# run it more than once.
set -euo pipefail
LLAMA_BENCH=${1:?usage: $0 llama-bench llama-server [workdir]}
LLAMA_SERVER=${2:?usage: $0 llama-bench llama-server [workdir]}
WORK=${3:-$(mktemp -d)}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
cd "$(dirname "$0")/.."
mkdir -p "$WORK"
go build -o "$WORK/glassbox" ./cmd/glassbox
GB="$WORK/glassbox"

declare -A MODELS=([qwen2.5-0.5b-q8_0]="--shape qwen2.5-0.5b --type q8_0" [tinyllama-1.1b-q4_k_m]="--shape tinyllama-1.1b --type q4_k_m")
for name in "${!MODELS[@]}"; do
  [ -f "$WORK/$name.gguf" ] || $GB model random ${MODELS[$name]} -o "$WORK/$name.gguf"
done

grep -m1 'model name' /proc/cpuinfo || true
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512_vnni|avx512vnni|avx512_bf16)$' | sort | tr '\n' ' ')
echo "CPU flags: ${isa:-unknown}; $THREADS threads (the CPU's, not what a build uses: llama.cpp runs what it was built for, glassbox names its kernels below)"

# FORMATS="f16 q8_0 ..." (or "all") runs only the format matrix: each
# weight format on the SHAPE (default qwen2.5-0.5b; tinyllama-1.1b for
# K-quants throughout: Qwen2.5-0.5B's 896 columns are not a multiple of
# 256, so its _K mixes are mostly Q5_0 and Q8_0, as llama.cpp quantises
# them), pp512 and tg128 on both sides, tg128's share of the read ceiling
# measured beside it, and the types glassbox's kernels ran.
if [ -n "${FORMATS:-}" ]; then
  [ "$FORMATS" = all ] && FORMATS="f16 bf16 q8_0 q4_0 q5_0 q4_k_m q4_k_s q5_k_m q5_k_s q6_k"
  SHAPE=${SHAPE:-qwen2.5-0.5b}
  echo "shape: $SHAPE"
  printf '\n| format | test | llama.cpp (min / median tok/s) | glassbox (min / median tok/s) | glassbox / llama.cpp (median) | glassbox tg128: share of the read ceiling | glassbox kernels |\n|---|---|---|---|---|---|---|\n'
  for f in $FORMATS; do
    m="$WORK/$SHAPE-$f.gguf"
    [ -f "$m" ] || $GB model random --shape "$SHAPE" --type "$f" -o "$m" > /dev/null
    "$LLAMA_BENCH" -m "$m" -p 512 -n 128 -t "$THREADS" -r "$REPS" -o json > "$WORK/llama-bench-$SHAPE-$f.json"
    $GB model bench -p 512 -n 128 -t "$THREADS" -r "$REPS" -read-bandwidth -json "$m" > "$WORK/glassbox-bench-$SHAPE-$f.json"
    python3 - "$f" "$WORK/llama-bench-$SHAPE-$f.json" "$WORK/glassbox-bench-$SHAPE-$f.json" <<'PY'
import json, sys
f, lf, gf = sys.argv[1:]
ll = {}
for r in json.load(open(lf)):
    t = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
    s = sorted(r["samples_ts"]); ll[t] = (s[0], s[len(s) // 2])
for r in json.load(open(gf)):
    t = r["test"]
    lmin, lmed = ll.get(t, (0, 0))
    share = "-"
    if r.get("gb_s") and r.get("read_ceiling_gb_s"):
        share = f'{100 * r["gb_s"] / r["read_ceiling_gb_s"]:.0f}% ({r["gb_s"]:.1f} GB/s; ceiling {r.get("read_before_gb_s", 0):.1f}-{r.get("read_after_gb_s", 0):.1f} before-after)'
    ratio = f'{r["median_ts"] / lmed:.2f}x' if lmed else "n/a"
    print(f'| {f} | {t} | {lmin:.1f} / {lmed:.1f} | {r["min_ts"]:.1f} / {r["median_ts"]:.1f} | {ratio} | {share} | {r.get("kernels", "")} |')
PY
  done
  echo "raw results in $WORK"
  exit 0
fi

rows=()
# bandwidth: decode's achieved weight + K/V read rate against the memory
# read ceiling model bench measured beside it (a STREAM-like sum).
bandwidth() {
  python3 - "$1" <<'PY'
import json, sys
r = next(r for r in json.load(open(sys.argv[1])) if r.get("gb_s"))
print(f'{r["gb_s"]:.1f} GB/s of {r["read_ceiling_gb_s"]:.1f} read ceiling ({100 * r["gb_s"] / r["read_ceiling_gb_s"]:.0f}%)')
PY
}
ratio() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{a/b:.2f}x' if b else 'n/a')" "$1" "$2"; }

for name in qwen2.5-0.5b-q8_0 tinyllama-1.1b-q4_k_m; do
  m="$WORK/$name.gguf"
  # REUSE=1 keeps the single-stream results of an earlier run in WORK.
  if [ -z "${REUSE:-}" ] || [ ! -s "$WORK/glassbox-bench-$name.json" ]; then
    "$LLAMA_BENCH" -m "$m" -p 512 -n 128 -t "$THREADS" -r "$REPS" -o json > "$WORK/llama-bench-$name.json"
    $GB model bench -p 512 -n 128 -t "$THREADS" -r "$REPS" -read-bandwidth -json "$m" > "$WORK/glassbox-bench-$name.json"
  fi
  for test in pp512 tg128; do
    read -r lmin lmed < <(python3 - "$WORK/llama-bench-$name.json" "$test" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    t = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
    if t == sys.argv[2]:
        s = sorted(r["samples_ts"]); print(f"{s[0]:.1f} {s[len(s)//2]:.1f}")
PY
)
    read -r gmin gmed < <(python3 - "$WORK/glassbox-bench-$name.json" "$test" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    if r["test"] == sys.argv[2]:
        print(f'{r["min_ts"]:.1f} {r["median_ts"]:.1f}')
PY
)
    rows+=("$name $test|$lmin / $lmed|$gmin / $gmed|$(ratio "$gmed" "$lmed")")
  done
  rows+=("$name tg128: glassbox's memory traffic|-|$(bandwidth "$WORK/glassbox-bench-$name.json")|-")
done

# Long context on the Qwen model.
m="$WORK/qwen2.5-0.5b-q8_0.gguf"
"$LLAMA_BENCH" -m "$m" -p 4000 -n 0 -pg 4000,128 -t "$THREADS" -r "$REPS" -o json > "$WORK/llama-bench-depth.json"
$GB model bench -p 4000 -n 0 -t "$THREADS" -r "$REPS" -json "$m" > "$WORK/glassbox-bench-pp4000.json"
$GB model bench -p 0 -n 128 -d 4000 -t "$THREADS" -r "$REPS" -read-bandwidth -json "$m" > "$WORK/glassbox-bench-d4000.json"
read -r lpp lpmed ltg < <(python3 - "$WORK/llama-bench-depth.json" <<'PY'
import json, sys, statistics
runs = json.load(open(sys.argv[1]))
pp = next(r for r in runs if r["n_prompt"] == 4000 and r["n_gen"] == 0)
pg = next(r for r in runs if r["n_prompt"] == 4000 and r["n_gen"] == 128)
s = sorted(pp["samples_ts"])
tpp = statistics.median(pp["samples_ns"]) / 1e9
tpg = statistics.median(pg["samples_ns"]) / 1e9
print(f"{s[0]:.1f} {s[len(s)//2]:.1f} {128 / (tpg - tpp):.1f}")
PY
)
read -r gpp gpmed < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; print(f'{r[\"min_ts\"]:.1f} {r[\"median_ts\"]:.1f}')" "$WORK/glassbox-bench-pp4000.json")
read -r gtg gtmed < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))[0]; print(f'{r[\"min_ts\"]:.1f} {r[\"median_ts\"]:.1f}')" "$WORK/glassbox-bench-d4000.json")
rows+=("qwen2.5-0.5b-q8_0 prefill of 4000 tokens|$lpp / $lpmed|$gpp / $gpmed|$(ratio "$gpmed" "$lpmed")")
rows+=("qwen2.5-0.5b-q8_0 decode at depth 4000|$ltg (derived)|$gtg / $gtmed|$(ratio "$gtmed" "$ltg")")
rows+=("qwen2.5-0.5b-q8_0 decode at depth 4000: glassbox's memory traffic|-|$(bandwidth "$WORK/glassbox-bench-d4000.json")|-")

# Continuous batching: aggregate output tokens/s through each server, for
# short prompts (the random models' byte-level vocabulary makes random-id
# prompts hundreds of tokens long, so use short texts) and 128 output tokens.
for i in $(seq 64); do printf '{"prompt": "Story %d: once upon a time"}\n' "$i"; done > "$WORK/prompts.jsonl"
serve_bench() { # port concurrency label
  $GB bench --base-url "http://127.0.0.1:$1" --model m --max-concurrency "$2" --num-prompts $(( $2 * 2 )) \
    --dataset-name custom --dataset-path "$WORK/prompts.jsonl" --custom-output-len 128 --ignore-eos --disable-tqdm --save-result \
    --result-dir "$WORK" --result-filename "$3.json" > /dev/null
  python3 -c "import json,sys; print(f\"{json.load(open(sys.argv[1]))['output_throughput']:.1f}\")" "$WORK/$3.json"
}
wait_up() { for _ in $(seq 600); do curl -sf "http://127.0.0.1:$1/health" > /dev/null && return 0; sleep 0.1; done; return 1; }
m="$WORK/qwen2.5-0.5b-q8_0.gguf"
for c in 1 2 4 32; do
  "$LLAMA_SERVER" -m "$m" -np "$c" -c $(( c * 256 )) -t "$THREADS" --host 127.0.0.1 --port 18181 -a m > "$WORK/llama-server.log" 2>&1 &
  lpid=$!; wait_up 18181; l=$(serve_bench 18181 "$c" "llama-server-c$c"); kill "$lpid"; wait "$lpid" 2>/dev/null || true
  $GB serve --model "$m" --threads "$THREADS" --max-num-seqs "$c" --host 127.0.0.1 --port 18182 --served-model-name m > "$WORK/glassbox-serve.log" 2>&1 &
  gpid=$!; wait_up 18182; g=$(serve_bench 18182 "$c" "glassbox-serve-c$c"); kill "$gpid"; wait "$gpid" 2>/dev/null || true
  rows+=("qwen2.5-0.5b-q8_0 $c streams aggregate tok/s|$l|$g|$(ratio "$g" "$l")")
done

printf '\n| workload | llama.cpp (min / median tok/s) | glassbox (min / median tok/s) | glassbox / llama.cpp (median) |\n|---|---|---|---|\n'
for r in "${rows[@]}"; do IFS='|' read -r a b c d <<< "$r"; printf '| %s | %s | %s | %s |\n' "$a" "$b" "$c" "$d"; done
echo; python3 -c "import json, sys; print('glassbox kernels:', json.load(open(sys.argv[1]))[0]['kernels'])" "$WORK/glassbox-bench-qwen2.5-0.5b-q8_0.json"
echo "raw results in $WORK"

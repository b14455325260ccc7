#!/usr/bin/env bash
# What structured outputs cost a decode step, side by side with free
# decoding, and against llama.cpp's grammar sampling on the same schema.
#
#   scripts/compare-structured.sh [PATH/TO/llama-cli] [WORKDIR]
#
# 1. BenchmarkConstrainedDecode: one decode step of a Qwen2.5-0.5B-shaped
#    model (random Q8_0 weights) at batch 1 and 32, free and with every
#    sequence held to a JSON schema over Qwen3's real 152k-token
#    vocabulary (from ../shared), REPS runs; min and median of each and
#    the ratio of the medians.
# 2. With llama-cli (llama.cpp c392e50, built as docs/cpu.md says): the
#    same shape with GPT-2's real vocabulary (../shared's
#    ggml-vocab-gpt-2.gguf, so both programs read one file), 128 tokens at
#    temperature 1, free and with --json-schema; glassbox serves the same
#    file and schema, and its per-choice timing gives the decode time per
#    token. Both report per-token time with the schema over without.
# 2-core machines are noisy: run it on an otherwise idle machine.
set -euo pipefail
LLAMA_CLI=${1:-}
WORK=${2:-$(mktemp -d)}
REPS=${REPS:-5}
THREADS=${THREADS:-2}
cd "$(dirname "$0")/.."
SHARED=$(cd .. && pwd)/shared
mkdir -p "$WORK"
grep -m1 'model name' /proc/cpuinfo || true
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512_vnni)$' | sort | tr '\n' ' ')
echo "ISA: ${isa:-unknown}; $THREADS threads"

echo "== BenchmarkConstrainedDecode (Qwen3 vocabulary), $REPS runs"
go test -run XXX -bench ConstrainedDecode -benchtime 10x -count "$REPS" ./internal/executor/cpu | tee "$WORK/bench.txt"
python3 - "$WORK/bench.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'BenchmarkConstrainedDecode/(batch-\d+)-\d+\s+\d+\s+\d+ ns/op\s+(.*)', line)
    if m:
        metrics = {unit: float(v) for v, unit in re.findall(r'([\d.]+) (\S+)', m[2])}
        runs.setdefault(m[1], []).append(metrics)
for batch, rs in sorted(runs.items(), key=lambda kv: int(kv[0].split('-')[1])):
    col = lambda k: [r[k] for r in rs]
    mm = lambda k: f"{min(col(k)):.2f} / {statistics.median(col(k)):.2f}"
    print(f"{batch}: free {mm('free-ms/step')} ms, json {mm('json-ms/step')} ms, json/free {mm('json/free')}, "
          f"mask {mm('mask-cpu-ms/step')} CPU-ms per step (min / median of {len(rs)})")
PY

[ -n "$LLAMA_CLI" ] || exit 0
go build -o "$WORK/glassbox" ./cmd/glassbox
GB="$WORK/glassbox"
MODEL="$WORK/qwen2.5-0.5b-gpt2vocab-q8_0.gguf"
[ -f "$MODEL" ] || $GB model random --arch qwen2 --shape qwen2.5-0.5b --type q8_0 --vocab "$SHARED/testdata/tokenizer/ggml-vocab-gpt-2.gguf" -o "$MODEL"
SCHEMA='{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"role":{"enum":["admin","user","guest"]},"score":{"type":"number"},"tags":{"type":"array","items":{"type":"string"},"maxItems":8},"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street","city","zip"]},"notes":{"type":["string","null"]}},"required":["name","age","role","score","tags","address"]}'
PROMPT="Fill in the form for Ada Lovelace:"

echo "== llama.cpp: llama-cli, 128 tokens, free and --json-schema, $REPS runs each"
for i in $(seq "$REPS"); do
  for mode in free json; do
    extra=()
    [ "$mode" = json ] && extra=(--json-schema "$SCHEMA")
    "$LLAMA_CLI" -m "$MODEL" -p "$PROMPT" -n 128 -no-cnv --temp 1 -s "$i" -t "$THREADS" "${extra[@]}" 2>"$WORK/llama-$mode-$i.log" >/dev/null || true
  done
done
python3 - "$WORK" "$REPS" <<'PY'
import re, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
per = {}
for mode in ('free', 'json'):
    for i in range(1, reps + 1):
        text = open(f'{work}/llama-{mode}-{i}.log').read()
        s = re.search(r'sampling time =\s+([\d.]+) ms /\s+(\d+) runs', text)
        e = re.search(r'\beval time =\s+([\d.]+) ms /\s+(\d+) runs', text)
        if s and e:
            per.setdefault(mode, []).append((float(s[1]) / int(s[2]), float(e[1]) / int(e[2])))
for mode, v in per.items():
    samp, ev = [x[0] for x in v], [x[1] for x in v]
    tot = [a + b for a, b in v]
    print(f'llama.cpp {mode}: sampling {statistics.median(samp):.2f} ms/token, eval {statistics.median(ev):.1f}, total {min(tot):.1f} / {statistics.median(tot):.1f} ms/token (min / median)')
if 'free' in per and 'json' in per:
    f = statistics.median([a + b for a, b in per['free']]); j = statistics.median([a + b for a, b in per['json']])
    print(f'llama.cpp json/free per token: {j / f:.3f}')
PY

echo "== glassbox serve, the same file and schema, $REPS runs each"
$GB serve --model "$MODEL" --port 18123 --threads "$THREADS" --max-num-seqs 4 >"$WORK/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do curl -sf localhost:18123/health >/dev/null && break; sleep 1; done
for i in $(seq "$REPS"); do
  for mode in free json; do
    if [ "$mode" = json ]; then
      body=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"user","content":sys.argv[1]}],"max_tokens":128,"temperature":1,"seed":int(sys.argv[3]),"response_format":{"type":"json_schema","json_schema":{"name":"form","schema":json.loads(sys.argv[2])}}}))' "$PROMPT" "$SCHEMA" "$i")
    else
      body=$(python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"user","content":sys.argv[1]}],"max_tokens":128,"temperature":1,"seed":int(sys.argv[2]),"ignore_eos":True}))' "$PROMPT" "$i")
    fi
    curl -s localhost:18123/v1/chat/completions -H 'Content-Type: application/json' -H 'Glassbox-Timing: true' -d "$body" >"$WORK/gb-$mode-$i.json"
  done
done
python3 - "$WORK" "$REPS" <<'PY'
import json, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
per = {}
for mode in ('free', 'json'):
    for i in range(1, reps + 1):
        r = json.load(open(f'{work}/gb-{mode}-{i}.json'))
        n = r['usage']['completion_tokens']
        if n > 1:
            per.setdefault(mode, []).append(1000 * r['timing'][0]['decode_time'] / (n - 1))
for mode, v in per.items():
    print(f'glassbox {mode}: decode {min(v):.1f} / {statistics.median(v):.1f} ms/token (min / median)')
if 'free' in per and 'json' in per:
    print(f'glassbox json/free per token: {statistics.median(per["json"]) / statistics.median(per["free"]):.3f}')
PY

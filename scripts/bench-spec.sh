#!/usr/bin/env bash
# Speculative decoding (n-gram prompt lookup) side by side with plain
# decoding, batch 1, in one run on the same model files:
# BenchmarkSpeculativeDecode REPS times, then per model and workload the
# min and median decode tokens/s of each mode and the ratio of the
# medians (ngram / plain), with the acceptance rate and drafts per token.
#
#   scripts/bench-spec.sh            # REPS=5 by default
#
# 2-core machines shared with other work are noisy: compare the ratios
# of one run, not absolute numbers across runs.
set -euo pipefail
REPS=${REPS:-5}
WORK=$(mktemp -d)
cd "$(dirname "$0")/.."
grep -m1 'model name' /proc/cpuinfo || true
isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512_vnni)$' | sort | tr '\n' ' ')
echo "ISA: ${isa:-unknown}; $(nproc) cores"
go test -run XXX -bench SpeculativeDecode -benchtime 2x -count "$REPS" ./internal/executor/cpu | tee "$WORK/bench.txt"
python3 - "$WORK/bench.txt" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'BenchmarkSpeculativeDecode/(\S+)/(\S+)/(plain|ngram)-\d+\s+\d+\s+\d+ ns/op\s+(.*)', line)
    if m:
        metrics = {unit: float(v) for v, unit in re.findall(r'([\d.]+) (\S+)', m[4])}
        runs.setdefault((m[1], m[2]), {}).setdefault(m[3], []).append(metrics)
print()
print("| model | workload | plain tok/s min / median | ngram tok/s min / median | ngram / plain (medians) | accepted / draft | drafts / token |")
print("|---|---|---|---|---|---|---|")
for (model, wl), modes in runs.items():
    tps = {k: [r["tok/s"] for r in v] for k, v in modes.items()}
    med = {k: statistics.median(v) for k, v in tps.items()}
    acc = statistics.median(r.get("accepted/draft", 0) for r in modes["ngram"])
    dpt = statistics.median(r.get("drafts/token", 0) for r in modes["ngram"])
    print(f"| {model} | {wl} | {min(tps['plain']):.1f} / {med['plain']:.1f} | {min(tps['ngram']):.1f} / {med['ngram']:.1f} | "
          f"{med['ngram'] / med['plain']:.2f}× | {acc:.2f} | {dpt:.2f} |")
PY

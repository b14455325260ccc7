#!/usr/bin/env bash
# Speculative decoding (n-gram prompt lookup and a draft model) side by
# side with plain decoding, batch 1, in one run on the same model files:
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
    m = re.match(r'BenchmarkSpeculativeDecode/(\S+)/(\S+)/(plain|ngram|draft)-\d+\s+\d+\s+\d+ ns/op\s+(.*)', line)
    if m:
        metrics = {unit: float(v) for v, unit in re.findall(r'([\d.e+-]+) (\S+)', m[4])}
        runs.setdefault((m[1], m[2]), {}).setdefault(m[3], []).append(metrics)
print()
print("| model | workload | mode | plain tok/s min / median | mode tok/s min / median | mode / plain (medians) | accepted / draft | accepted at positions 0-3 (per verify pass) | drafts / token | MB read / token (plain → mode) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (model, wl), modes in runs.items():
    tps = {k: [r["tok/s"] for r in v] for k, v in modes.items()}
    med = {k: statistics.median(v) for k, v in tps.items()}
    mb = {k: statistics.median(r.get("MB/token", 0) for r in v) for k, v in modes.items()}
    for mode in [m for m in modes if m != "plain"]:
        rs = modes[mode]
        acc = statistics.median(r.get("accepted/draft", 0) for r in rs)
        dpt = statistics.median(r.get("drafts/token", 0) for r in rs)
        pos = " / ".join(f"{statistics.median(r.get(f'accepted@{i}', 0) for r in rs):.2f}" for i in range(4))
        print(f"| {model} | {wl} | {mode} | {min(tps['plain']):.1f} / {med['plain']:.1f} | {min(tps[mode]):.1f} / {med[mode]:.1f} | "
              f"{med[mode] / med['plain']:.2f}× | {acc:.2f} | {pos} | {dpt:.2f} | {mb['plain']:.1f} → {mb[mode]:.1f} |")
PY

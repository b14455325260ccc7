#!/usr/bin/env bash
# Agent sessions against a live server and in virtual time, as issue 44
# measured them: glassbox bench against glassbox serve --sim-model
# llama-3.1-8b (real time) with 30 sessions of 3 turns at 2/s and 200 ms of
# tool time, then glassbox simulate on the same flags. Prints each run's
# turn and session tables, its server view, and session 0's and the last
# session's turns (due, sent, TTFT, answer), which docs/bench.md's "Agent
# sessions" quotes.
#
#   scripts/agent-sessions.sh            # PORT=8944 by default
#
# bench's numbers are wall-clock: run it on an otherwise idle machine.
set -euo pipefail
PORT=${PORT:-8944}
WORK=$(mktemp -d)
cd "$(dirname "$0")/.."
go build -o "$WORK/glassbox" ./cmd/glassbox
"$WORK/glassbox" serve --sim-model llama-3.1-8b --port "$PORT" --log-level warn >"$WORK/serve.log" 2>&1 &
SERVE=$!
trap 'kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
	sleep 0.1
done
LOAD=(--dataset-name agent --agent-turns 3 --agent-tool-latency 200ms --request-rate 2 --num-prompts 30
	--metric-percentiles 50,99 --save-detailed --seed 0)
echo "== glassbox bench against glassbox serve --sim-model llama-3.1-8b"
"$WORK/glassbox" bench --base-url "http://127.0.0.1:$PORT" --disable-tqdm --result-filename "$WORK/bench.json" "${LOAD[@]}" |
	sed -n '/Agent sessions by turn/,/^====/p'
echo "== glassbox simulate"
"$WORK/glassbox" simulate --sim-model llama-3.1-8b --result-filename "$WORK/sim.json" "${LOAD[@]}" |
	sed -n '/Agent sessions by turn/,/^====/p'
python3 - "$WORK/bench.json" "$WORK/sim.json" <<'PY'
import json, sys
for name, path in zip(("bench", "simulate"), sys.argv[1:]):
    j = json.load(open(path))
    last = max(j["request_sessions"])
    print(f"== {name}: session 0's and session {last}'s turns (seconds from the run's start)")
    for i, s in enumerate(j["request_sessions"]):
        if s in (0, last):
            end = j["start_times"][i] + j["latencies"][i]
            print(f"session {s:2d} turn {j['request_turns'][i]}: due {j['due_times'][i]:7.3f}  sent {j['start_times'][i]:7.3f}  "
                  f"TTFT {1000 * j['ttfts'][i]:7.1f} ms  answered {end:7.3f}")
PY

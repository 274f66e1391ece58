#!/usr/bin/env bash
# The "within 25 % of raw" check of bench/README.md: K alternating runs of rath and raw
# (rath first), so that both see the same period of a shared machine. Prints each run's
# JSON line, then one summary line per pair and the range over all pairs:
#   {"bench":"fanout_pair","pair":1,"cpu_ratio":1.21,"sessions_ratio":0.86}
#   {"bench":"fanout_pairs","pairs":5,"cpu_ratio_min":…,"cpu_ratio_median":…,"cpu_ratio_max":…,
#    "sessions_ratio_min":…,"sessions_ratio_median":…,"sessions_ratio_max":…,"within_25_percent":3}
# (within_25_percent: pairs with CPU ≤ 1.25× raw's and sessions/s ≥ 0.75× raw's.)
#
#   bench/fanout_pairs.sh [build-dir=build] [pairs=5] [extra fanout args]
# e.g. bench/fanout_pairs.sh build 5 --sessions 100000 --stream
# Defaults: --sessions 10000 --latency-ms 50 --no-park-probe. Needs python3.
set -euo pipefail
build=${1:-build}
pairs=${2:-5}
shift 2 || shift $# || true
bin="$build/bin/fanout"
[ -x "$bin" ] || { echo "no $bin (build the project first)" >&2; exit 1; }

args=(--sessions 10000 --latency-ms 50 --no-park-probe "$@")  # later flags win
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for k in $(seq "$pairs"); do
  for mode in rath raw; do
    extra=()
    [ "$mode" = raw ] && extra=(--raw)
    line=$("$bin" "${args[@]}" "${extra[@]}" 2>/dev/null) || { echo "fanout failed: ${args[*]} ${extra[*]}" >&2; exit 1; }
    echo "$line"
    echo "$line" >> "$lines"
  done
done

python3 - "$lines" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cpu, sps, ok = [], [], 0
for k in range(0, len(runs) - 1, 2):
    rath, raw = runs[k], runs[k + 1]
    if rath["errors"] or raw["errors"]:
        print(json.dumps({"bench": "fanout_pair", "pair": k // 2 + 1, "errors": rath["errors"] + raw["errors"]}))
        continue
    c = rath["cpu_ms_per_session"] / raw["cpu_ms_per_session"]
    s = rath["sessions_per_s"] / raw["sessions_per_s"]
    cpu.append(c)
    sps.append(s)
    ok += c <= 1.25 and s >= 0.75
    print(json.dumps({"bench": "fanout_pair", "pair": k // 2 + 1, "cpu_ratio": round(c, 3), "sessions_ratio": round(s, 3)}))
if cpu:
    med = lambda v: round(statistics.median(v), 3)
    print(json.dumps({"bench": "fanout_pairs", "pairs": len(cpu), "cpu_ratio_min": round(min(cpu), 3),
                      "cpu_ratio_median": med(cpu), "cpu_ratio_max": round(max(cpu), 3),
                      "sessions_ratio_min": round(min(sps), 3), "sessions_ratio_median": med(sps),
                      "sessions_ratio_max": round(max(sps), 3), "within_25_percent": ok}))
EOF

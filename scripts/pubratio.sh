#!/usr/bin/env bash
# Measures the publisher's target the way docs/performance.md reports
# it: the publisher's throughput as a fraction of the raw-gRPC baseline's.
#
#   scripts/pubratio.sh [rounds] [messages]      defaults: 16 rounds, 10000000
#
# Each round runs BenchmarkPublish and BenchmarkBaselineRawGRPC back to back
# in one test process, so both see the same machine, and takes the ratio of
# their msgs/s. On a shared VM either one moves by a third from minute to
# minute, so only the ratio of a round means something and only the median
# of many rounds is worth quoting. Prints every round (ratio, both msgs/s,
# both cpu-ns/msg) and the min/median/max ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-16}
msgs=${2:-10000000}
[[ $rounds =~ ^[1-9][0-9]*$ && $msgs =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [rounds] [messages], both positive integers" >&2
  exit 2
}

bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./pkg/queue/pub
cd pkg/queue/pub # the test binary expects its package directory

ratios=()
printf '%-6s %-7s %-12s %-12s %-10s %-10s\n' round ratio publish/s baseline/s pub-cpu base-cpu
for r in $(seq "$rounds"); do
  out=$("$bin" -test.run '^$' -test.bench 'BenchmarkPublish$|BenchmarkBaselineRawGRPC' -test.benchtime "${msgs}x")
  # Columns of a benchmark line: name, N, ns/op, value unit pairs after.
  line=$(awk '
    function metric(unit,   i) { for (i = 4; i < NF; i++) if ($(i+1) == unit) return $i; return "" }
    /^BenchmarkPublish-/ { pr = metric("msgs/s"); pc = metric("cpu-ns/msg") }
    /^BenchmarkBaselineRawGRPC-/ { br = metric("msgs/s"); bc = metric("cpu-ns/msg") }
    END { if (pr == "" || br == "") exit 1; printf "%.3f %d %d %s %s", pr / br, pr, br, pc, bc }
  ' <<<"$out") || {
    echo "$0: round $r: no result from the benchmarks:" >&2
    echo "$out" >&2
    exit 1
  }
  read -r ratio pr br pc bc <<<"$line"
  ratios+=("$ratio")
  printf '%-6s %-7s %-12s %-12s %-10s %-10s\n' "$r" "$ratio" "$pr" "$br" "$pc" "$bc"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
  { r[NR] = $1 }
  END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf "ratio over %d rounds: min %.3f / median %.3f / max %.3f (target 0.8)\n", NR, r[1], m, r[NR] }'

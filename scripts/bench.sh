#!/usr/bin/env bash
# Reproduces the write-throughput numbers of docs/performance.md with every
# role in a separate process on loopback:
#
#   scripts/bench.sh standalone [bench flags...]   banyand standalone + load tool
#   scripts/bench.sh cluster    [bench flags...]   etcd + 2 storage + 1 liaison + load tool
#   scripts/bench.sh sink       [bench flags...]   cmd/writesink (answers, keeps nothing) + load tool
#
# sink measures the ceiling of the write API itself on this machine: the
# same load against a server that does no work (no schema, no verify).
#
# It builds bin/banyand, starts the servers with fresh data directories,
# runs `banyand bench --target ... --json` RUNS times (default 3) against
# them and prints each run and the min/median/max of acked writes/s and of
# the p99 ack latency, and the CPU the banyand servers spent a write (from
# their /metrics, over the write phase). Extra flags go to `banyand bench` (e.g. --kind
# measure, --count 400000, --rate 50000). Needs jq; cluster mode needs
# etcd on PATH (Debian: apt-get install etcd-server). The servers run with
# --pprof: their HTTP addresses are printed, so a profile or trace of a
# server under load is one curl away (docs/performance.md). STORE_FLAGS
# adds flags to the processes that store data (standalone, storage), e.g.
# STORE_FLAGS="--write-log-gather 0" to compare a setting. KINDS runs
# several kinds side by side against the same servers, alternating within
# each run, e.g. KINDS="stream trace" (each run writes --kind stream, then
# --kind trace); the summary is per kind. SERVER_BIN runs another banyand
# binary as the servers (bin/banyand stays the load tool), e.g. one built
# from another commit, so two commits are compared with the same client.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
shift || true
case "$mode" in
standalone | cluster | sink) ;;
*)
  echo "usage: $0 standalone|cluster|sink [banyand bench flags...]" >&2
  exit 2
  ;;
esac
command -v jq >/dev/null || { echo "$0: jq is required" >&2; exit 2; }
if [[ $mode == cluster ]]; then
  command -v etcd >/dev/null || { echo "$0: etcd is required on PATH for cluster mode" >&2; exit 2; }
fi
RUNS=${RUNS:-3}

go build -o bin/banyand ./cmd/banyand
server=${SERVER_BIN:-bin/banyand}
[[ $mode == sink ]] && go build -o bin/writesink ./cmd/writesink
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# free_port asks the kernel for a free loopback port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready polls an HTTP /readyz until it answers 200 (30 s at most).
wait_ready() {
  for _ in $(seq 300); do
    curl -fs "http://$1/readyz" >/dev/null 2>&1 && echo "ready: http://$1/debug/pprof/" >&2 && return 0
    sleep 0.1
  done
  echo "$0: $1/readyz not ready after 30s; logs in $work" >&2
  exit 1
}

start() { # start NAME ARGS...: runs a process in the background, logging to $work/NAME.log
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}

client=127.0.0.1:$(free_port)
metrics=() # the banyand servers' /metrics, for their CPU a write
extra=() # flags the mode needs
if [[ $mode == sink ]]; then
  http=127.0.0.1:$(free_port)
  start writesink bin/writesink --grpc-addr "$client" --http-addr "$http"
  for _ in $(seq 300); do curl -fs "http://$http/metrics" >/dev/null 2>&1 && break; sleep 0.1; done
  metrics+=("http://$http/metrics")
  extra=(--create-schema=false --verify=false) # it keeps no schema and nothing to read back
elif [[ $mode == standalone ]]; then
  http=127.0.0.1:$(free_port)
  # shellcheck disable=SC2086 # STORE_FLAGS is a list of flags
  start standalone "$server" standalone ${STORE_FLAGS:-} --grpc-addr "$client" --http-addr "$http" --pprof --data-path "$work/standalone"
  wait_ready "$http"
  metrics+=("http://$http/metrics")
else
  etcd_client=http://127.0.0.1:$(free_port)
  etcd_peer=http://127.0.0.1:$(free_port)
  start etcd etcd --data-dir "$work/etcd" --listen-client-urls "$etcd_client" --advertise-client-urls "$etcd_client" \
    --listen-peer-urls "$etcd_peer" --initial-advertise-peer-urls "$etcd_peer" --initial-cluster "default=$etcd_peer"
  for i in 0 1; do
    http=127.0.0.1:$(free_port)
    # shellcheck disable=SC2086
    start "storage-$i" "$server" storage ${STORE_FLAGS:-} --node-name "data-$i" --grpc-addr "127.0.0.1:$(free_port)" \
      --http-addr "$http" --pprof --data-path "$work/storage-$i" --etcd-endpoints "$etcd_client"
    wait_ready "$http"
    metrics+=("http://$http/metrics")
  done
  http=127.0.0.1:$(free_port)
  start liaison "$server" liaison --grpc-addr "$client" --http-addr "$http" --pprof --etcd-endpoints "$etcd_client"
  wait_ready "$http"
  metrics+=("http://$http/metrics")
fi

read -r -a kinds <<<"${KINDS:-}"
[[ ${#kinds[@]} -eq 0 ]] && kinds=("")
results=()
for run in $(seq "$RUNS"); do
  for kind in "${kinds[@]}"; do
    kflag=()
    [[ -n $kind ]] && kflag=(--kind "$kind")
    out=$(bin/banyand bench --target "$client" --json --server-metrics "$(IFS=,; echo "${metrics[*]}")" "${extra[@]}" "${kflag[@]}" "$@" 2>"$work/bench-$run$kind.log") || {
      echo "run $run $kind failed:" >&2
      cat "$work/bench-$run$kind.log" >&2
      echo "$out" >&2
      exit 1
    }
    results+=("$out")
    echo "$out" | jq -r --arg run "$run" \
      '"run \($run) \(.kind): \(.acked)/\(.sent) acked, \(.acked_per_sec|floor) writes/s, p50 \(.ack_latency_ms.p50) ms, p99 \(.ack_latency_ms.p99) ms, errors \(.error_count), verify \(.verify.readable // "off")/\(.verify.checked // "-"), cpu µs a write: servers \(.cpu[1:] | map(.us_per_write) | add | . * 10 | round / 10) + load tool \(.cpu[0].us_per_write * 10 | round / 10)"'
  done
done
printf '%s\n' "${results[@]}" | jq -s -r --arg mode "$mode" '
  def stats(f; r): (map(f | r) | sort) as $v | "min \($v[0])  median \($v[(($v|length)-1)/2|floor])  max \($v[-1])";
  group_by(.kind)[] |
  "\($mode), \(length) runs, \(.[0].kind), \(.[0].shape) shape, \(.[0].streams) streams, \(.[0].entities) entities, \(.[0].payload_bytes)-byte payload:",
  "  acked writes/s  " + stats(.acked_per_sec; floor),
  "  p99 ack ms      " + stats(.ack_latency_ms.p99; . * 10 | round / 10),
  "  server cpu µs a write (all banyand processes, write phase) " + stats(.cpu[1:] | map(.us_per_write) | add; . * 10 | round / 10)'

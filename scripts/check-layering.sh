#!/usr/bin/env bash
# Enforces the layering in DESIGN.md with the Go tool's own import graph:
#   - nothing under pkg/ imports anything under banyand/;
#   - pkg/queue itself knows nothing of gRPC;
#   - only the registry's etcd implementation imports etcd;
#   - the roles' services do not reach into each other: banyand/liaison and
#     banyand/storage import neither the other nor banyand/roles (what both
#     need lives in banyand/schema and pkg/).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
fail=0

for p in $(go list ./pkg/...); do
  if go list -deps "$p" | grep -q "^$mod/banyand"; then
    echo "layering: $p imports $mod/banyand/..."; fail=1
  fi
done

if go list -deps "$mod/pkg/queue" 2>/dev/null | grep -q '^google.golang.org/grpc$'; then
  echo "layering: $mod/pkg/queue imports google.golang.org/grpc"; fail=1
fi

for pair in "liaison storage" "storage liaison" "liaison roles" "storage roles" "schema liaison" "schema storage"; do
  set -- $pair
  if go list -deps "$mod/banyand/$1/..." | grep -q "^$mod/banyand/$2\(/\|$\)"; then
    echo "layering: $mod/banyand/$1 imports $mod/banyand/$2"; fail=1
  fi
done

etcd_allowed="^$mod/pkg/registry/etcd"
for p in $(go list ./... | grep -v -E "$etcd_allowed|^$mod/test"); do
  # direct imports only: the roles wire the etcd registry in, that is fine
  if go list -f '{{join .Imports "\n"}}' "$p" | grep -q '^go.etcd.io/etcd/'; then
    echo "layering: $p imports etcd directly (only $etcd_allowed may)"; fail=1
  fi
done
exit $fail

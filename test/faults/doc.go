//go:build faults

// Package faults is banyand's fault suite: it builds the banyand binary,
// starts a real etcd, data nodes and liaisons as separate processes, drives
// load through the public gRPC API and kills processes with SIGKILL under
// load, then checks that every acknowledged write is readable exactly once.
//
// It is behind the build tag "faults" so `make test` does not run it:
//
//	go test -tags faults -race=false -count=1 -timeout 10m -v ./test/faults/
//
// See docs/design/faults.md.
package faults

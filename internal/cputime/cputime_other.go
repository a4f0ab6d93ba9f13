//go:build !unix

// Package cputime reads this process's CPU time, for the load tool's
// report and for benchmarks that report CPU a write: on a shared machine
// it measures what a write costs better than the wall clock does.
package cputime

import (
	"errors"
	"time"
)

// Process is not available here.
func Process() (time.Duration, error) {
	return 0, errors.New("process CPU time is not available on this platform")
}

package cputime

import "time"

// failer is the part of testing.TB that Of uses, so that the load tool
// linking this package does not link the testing package.
type failer interface {
	Helper()
	Fatal(args ...any)
}

// Of is Process for a test or benchmark, which it fails if the time
// cannot be read.
func Of(tb failer) time.Duration {
	tb.Helper()
	d, err := Process()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

package cputime

import "testing"

// The CPU time grows while the process works.
func TestProcessGrows(t *testing.T) {
	before := Of(t)
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if after := Of(t); after <= before {
		t.Fatalf("CPU time %v after work, %v before (x %d)", after, before, x)
	}
}

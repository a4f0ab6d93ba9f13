package route

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestNegLog2(t *testing.T) {
	const one = uint64(1) << 32 // 1.0 in Q32.32
	tests := []struct {
		h    uint64
		want uint64
	}{
		{1 << 63, one},      // u = 1/2
		{1 << 62, 2 * one},  // u = 1/4
		{1 << 32, 32 * one}, // u = 2^-32
		{1, 64 * one},       // smallest u
		{0, 64 * one},       // 0 is treated as 1: never infinite
		// 64*2^32 - floor(log2(3*2^62) * 2^32), from 60-digit decimal arithmetic.
		{3 << 62, 0x6a3fe5c7},
	}
	for _, tt := range tests {
		if got := negLog2(tt.h); got != tt.want {
			t.Errorf("negLog2(%#x) = %#x, want %#x", tt.h, got, tt.want)
		}
	}
	if got := negLog2(math.MaxUint64); got < 1 {
		t.Errorf("negLog2(max) = %d, want >= 1", got)
	}
}

// TestNegLog2Property checks the fixed-point log against float64 and that it
// never increases with the hash, which is what lets equal weights rank by
// hash alone.
func TestNegLog2Property(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		a, b := rng.Uint64()>>rng.IntN(64), rng.Uint64()>>rng.IntN(64)
		if a > b {
			a, b = b, a
		}
		if negLog2(a) < negLog2(b) {
			t.Fatalf("negLog2(%#x) < negLog2(%#x)", a, b)
		}
		got := float64(negLog2(b)) / (1 << 32)
		want := -math.Log2(float64(max(b, 1)) / math.Pow(2, 64))
		if math.Abs(got-want) > 1e-9*max(1, want) && math.Abs(got-want) > 1e-12 {
			t.Fatalf("negLog2(%#x) = %v, want %v", b, got, want)
		}
	}
}

// TestWeightedHRWShare checks the point of the weighted score: without any
// quota, a node wins first place on a share of shards close to its weight.
func TestWeightedHRWShare(t *testing.T) {
	nodes := []Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 5}}
	sc := newScorer(nodes)
	wins := make([]int, len(nodes))
	const shards = 40000
	var buf []score
	for s := range uint32(shards) {
		buf = sc.rank(buf, fmt.Sprintf("g%d", s%7), s)
		wins[buf[0].node]++
	}
	for i, n := range nodes {
		got, want := float64(wins[i])/shards, float64(n.Weight)/8
		t.Logf("node %s weight %d: wins %.3f of shards (expect %.3f)", n.Name, n.Weight, got, want)
		if math.Abs(got-want) > 0.02 {
			t.Errorf("node %s wins %.3f, want %.3f ± 0.02", n.Name, got, want)
		}
	}
}

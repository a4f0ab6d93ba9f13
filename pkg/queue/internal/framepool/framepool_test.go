package framepool

import "testing"

func TestGetPut(t *testing.T) {
	var p Pool
	for _, n := range []int{0, 1, 1 << MinShift, 1<<MinShift + 1, 300 << 10, 1 << MaxShift} {
		bp := p.Get(n)
		c := cap(*bp)
		if len(*bp) != n || c < n || c < 1<<MinShift || c&(c-1) != 0 {
			t.Fatalf("Get(%d): len %d cap %d, want len %d and a power-of-two cap", n, len(*bp), c, n)
		}
		p.Put(bp)
	}
	big := p.Get(1<<MaxShift + 1)
	if cap(*big) != 1<<MaxShift+1 {
		t.Fatalf("oversized: cap %d, want exact", cap(*big))
	}
	p.Put(big) // dropped, not pooled
	foreign := make([]byte, 5000)
	p.Put(&foreign) // not a class capacity: dropped
	if bp := p.Get(5000); cap(*bp) != 8192 {
		t.Fatalf("Get(5000) after a foreign Put: cap %d, want 8192", cap(*bp))
	}
	p.Put(nil)
}

func TestReuse(t *testing.T) {
	var p Pool
	bp := p.Get(10000)
	(*bp)[0] = 42
	p.Put(bp)
	// sync.Pool may drop it (GC, race detector), but whatever comes back
	// has the asked length and its class's capacity.
	again := p.Get(9000)
	if len(*again) != 9000 || cap(*again) != 16384 {
		t.Fatalf("len %d cap %d", len(*again), cap(*again))
	}
}

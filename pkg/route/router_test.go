package route

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestRouterVersions(t *testing.T) {
	r := NewRouter()
	if v := r.Current().Version(); v != 0 {
		t.Fatalf("new router at version %d", v)
	}
	if _, err := r.Current().Nodes("g", 0); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("lookup before first update: err = %v", err)
	}
	groups := []Group{{Name: "g", ShardNum: 4}}
	for want := uint64(1); want <= 3; want++ {
		tb, err := r.Update(namedNodes("a", "b"), groups)
		if err != nil {
			t.Fatal(err)
		}
		if tb.Version() != want || r.Current() != tb {
			t.Fatalf("update %d: version %d, current is the new table: %v", want, tb.Version(), r.Current() == tb)
		}
	}
	// A bad update keeps the table in force.
	before := r.Current()
	tb, err := r.Update(namedNodes("a", "a"), groups)
	if !errors.Is(err, ErrInvalidNode) {
		t.Fatalf("err = %v, want ErrInvalidNode", err)
	}
	if tb != before || r.Current() != before {
		t.Fatal("failed update replaced the table")
	}
	if next, _ := r.Update(namedNodes("a"), groups); next.Version() != 4 {
		t.Fatalf("version after failed update = %d, want 4", next.Version())
	}
}

// TestRouterConcurrent runs lookups while one updater swaps tables; under
// -race it proves the hot path needs no lock. Each reader's table must be
// internally consistent: every lookup answers from the node set it was
// built with.
func TestRouterConcurrent(t *testing.T) {
	r := NewRouter()
	groups := []Group{{Name: "g", ShardNum: 16, Replicas: 1}}
	sets := [][]Node{namedNodes("a", "b"), namedNodes("a", "b", "c"), namedNodes("b", "c", "d", "e")}
	if _, err := r.Update(sets[0], groups); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	done := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for {
				select {
				case <-done:
					return
				default:
				}
				tb := r.Current()
				if tb.Version() < last {
					errs <- fmt.Errorf("version went back from %d to %d", last, tb.Version())
					return
				}
				last = tb.Version()
				members := map[string]bool{}
				for _, m := range tb.Members() {
					members[m.Name] = true
				}
				for s := range uint32(16) {
					nodes, err := tb.Nodes("g", s)
					if err != nil {
						errs <- err
						return
					}
					for _, n := range nodes {
						if !members[n.Name] {
							errs <- fmt.Errorf("table %d routes to %s, not a member", tb.Version(), n.Name)
							return
						}
					}
				}
			}
		}()
	}
	for i := range 200 {
		if _, err := r.Update(sets[i%len(sets)], groups); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v := r.Current().Version(); v != 201 {
		t.Fatalf("final version %d, want 201", v)
	}
}

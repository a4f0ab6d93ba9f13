package topn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

func names(r *Ranking) []string {
	var out []string
	for _, e := range r.Entries() {
		out = append(out, fmt.Sprintf("%s=%d", e.Series, e.Value.Int))
	}
	return out
}

func put(r *Ranking, series string, ts, version, v int64) bool {
	return r.Put([]byte(series), ts, version, Value{Int: v}, func() []byte {
		raw, err := proto.Marshal(&modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: series}}})
		if err != nil {
			panic(err)
		}
		return AppendEntityValue(nil, raw)
	})
}

// rankWrite is a point of series s; unchanged: it leaves the ranking as it was.
type rankWrite struct {
	s         string
	ts, ver   int64
	v         int64
	unchanged bool
}

func TestRankingRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		cap    int
		desc   bool
		writes []rankWrite
		want   []string
	}{
		{name: "highest first, ties in arrival order", cap: 3, desc: true, writes: []rankWrite{{s: "a", v: 1}, {s: "b", v: 5}, {s: "c", v: 5}, {s: "d", v: 3}}, want: []string{"b=5", "c=5", "d=3"}},
		{name: "lowest first", cap: 2, writes: []rankWrite{{s: "a", v: 4}, {s: "b", v: 2}, {s: "c", v: 9, unchanged: true}, {s: "d", v: 1}}, want: []string{"d=1", "b=2"}},
		{name: "a later point of the series replaces its value", cap: 3, desc: true, writes: []rankWrite{{s: "a", v: 1}, {s: "b", v: 2}, {s: "a", ts: 1, v: 7}, {s: "b", ts: 0, ver: 1, v: 0}}, want: []string{"a=7", "b=0"}},
		{name: "an older point or a lower version does not", cap: 3, desc: true, writes: []rankWrite{{s: "a", ts: 5, ver: 2, v: 1}, {s: "a", ts: 4, ver: 9, v: 8, unchanged: true}, {s: "a", ts: 5, ver: 1, v: 8, unchanged: true}}, want: []string{"a=1"}},
		{name: "a series pushed out is forgotten", cap: 2, desc: true, writes: []rankWrite{{s: "x", v: 5}, {s: "y", v: 4}, {s: "z", v: 3, unchanged: true}, {s: "x", ts: 1, v: 1}}, want: []string{"y=4", "x=1"}},
	} {
		r := NewRanking(c.cap, c.desc)
		for i, w := range c.writes {
			if changed := put(r, w.s, w.ts, w.ver, w.v); changed == w.unchanged {
				t.Errorf("%s: write %d changed=%v", c.name, i, changed)
			}
		}
		if got := names(r); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Without a series overwritten below where it was, a bounded ranking is
// exactly the best cap series of their latest values; with room for
// every series it is so whatever the writes. Checked against sorting all.
func TestRankingAgainstSortingAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		desc := round%2 == 0
		series := 1 + rng.IntN(60)
		capacity := 1 + rng.IntN(40)
		onlyBetter := round%3 != 0
		if !onlyBetter {
			capacity = series
		}
		r := NewRanking(capacity, desc)
		latest := map[string]int64{}
		for i := range 300 {
			s := fmt.Sprintf("s%d", rng.IntN(series))
			v := rng.Int64N(1000)*1000 + int64(i) // distinct: no ties
			if prev, ok := latest[s]; ok && onlyBetter && ((desc && v < prev) || (!desc && v > prev)) {
				continue
			}
			latest[s] = v
			put(r, s, int64(i), 0, v)
		}
		var want []string
		for s, v := range latest {
			want = append(want, fmt.Sprintf("%s=%d", s, v))
		}
		slices.SortFunc(want, func(a, b string) int {
			var va, vb int64
			_, _ = fmt.Sscanf(a[slices.Index([]byte(a), '=')+1:], "%d", &va)
			_, _ = fmt.Sscanf(b[slices.Index([]byte(b), '=')+1:], "%d", &vb)
			if desc {
				va, vb = vb, va
			}
			return int(va - vb)
		})
		want = want[:min(len(want), capacity)]
		if got := names(r); !slices.Equal(got, want) {
			t.Fatalf("round %d (cap %d, desc %v): %v, want %v", round, capacity, desc, got, want)
		}
	}
}

// A ranking read back from its record is the same ranking, and a query
// reads its items as they were written: entity tags named, a null for
// an empty value.
func TestRankingRecordRoundTrip(t *testing.T) {
	r := NewRanking(3, true)
	for i, s := range []string{"a", "b", "c", "d"} {
		put(r, s, int64(i), int64(10+i), int64(i*3))
	}
	r.Put([]byte("e"), 9, 1, Value{F: 2.5, Float: true}, func() []byte { return AppendEntityValue(nil, nil) })
	b := r.Marshal(nil, []string{"svc"})
	back, err := Unmarshal(b, 3, true, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(back), names(r); !slices.Equal(got, want) || back.Version != 7 {
		t.Fatalf("%v (version %d), want %v", got, back.Version, want)
	}
	items, err := Items(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		e := r.Entries()[i]
		if it.GetTimestamp().AsTime().UnixNano() != e.Timestamp || it.GetVersion() != e.Version ||
			it.GetEntity()[0].GetKey() != "svc" || it.GetEntity()[0].GetValue().GetStr().GetValue() != e.Series || it.GetValue().GetInt().GetValue() != e.Value.Int {
			t.Fatalf("item %d: %v, want %+v", i, it, e)
		}
	}
	r = NewRanking(2, false)
	r.Put([]byte("e"), 9, 1, Value{F: 2.5, Float: true}, func() []byte { return AppendEntityValue(nil, nil) })
	items, err = Items(r.Marshal(nil, []string{"svc"}))
	if err != nil {
		t.Fatal(err)
	}
	if it := items[0]; it.GetValue().GetFloat().GetValue() != 2.5 || it.GetEntity()[0].GetValue().GetNull() != 0 || it.GetEntity()[0].GetValue().GetValue() == nil {
		t.Fatalf("float item with a null entity value: %v", it)
	}
	for n := 1; n < len(b); n++ {
		if _, err := Items(b[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(b))
		}
	}
}

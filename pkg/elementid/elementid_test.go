package elementid

import (
	"strings"
	"testing"
)

// TestOfBanyanDB checks Of against element ids BanyanDB v0.10.3 answers
// in its test/cases/stream/data/want files, for the ids its loader
// writes (a counter per stream, from 0).
func TestOfBanyanDB(t *testing.T) {
	for _, tc := range []struct{ group, name, id, want string }{
		{"default", "sw", "0", "0978df79cf4ed409"}, // sort_desc.yaml, order_asc.yaml
		{"default", "sw", "1", "4dd999e3502d728d"},
		{"default", "sw", "2", "fafaa63b403a1604"},
		{"default", "sw", "3", "5fdc8aab6ea5c9d4"},
		{"default", "sw", "4", "aaede9362761569a"},
		{"default", "duplicated", "0", "5df4d9d2f751488d"}, // duplicated_all.yaml
		{"default", "duplicated", "1", "0a6f72178f0fdbeb"},
		{"default", "duplicated", "2", "b55ed52d70bbfbe7"},
		{"default", "duplicated", "3", "93423d5c731c53ed"},
		{"default", "duplicated", "4", "dbc685c3e6aac8b7"},
		{"default", "deduplication_test", "0", "57cb4d2d9b46a78c"}, // deduplication_test_limit_10.yaml
		{"default", "deduplication_test", "9", "5ad055c083561274"},
		{"default", "deduplication_test", "26", "5dfc63825b7ed53f"},
	} {
		if got := Of(tc.group, tc.name, tc.id); got != tc.want {
			t.Errorf("Of(%q, %q, %q) = %s, want %s", tc.group, tc.name, tc.id, got, tc.want)
		}
	}
}

// TestOfLong: ids longer than the stack buffer hash the same way.
func TestOfLong(t *testing.T) {
	long := strings.Repeat("x", 300)
	a, b := Of("g", "n", long), Of("g", "n", long+"y")
	if len(a) != 16 || a == b {
		t.Fatalf("Of of long ids: %s, %s", a, b)
	}
	if Of("g", "n", long) != a {
		t.Fatal("Of is not deterministic")
	}
}

func TestUnnamed(t *testing.T) {
	base := Unnamed("g", "n", "series", 1)
	for _, other := range []string{
		Unnamed("g", "n", "series", 2),
		Unnamed("g", "n", "series2", 1),
		Unnamed("g2", "n", "series", 1),
		Unnamed("g", "n2", "series", 1),
		// The group/name boundary is part of the input.
		Unnamed("gn", "", "series", 1),
	} {
		if other == base {
			t.Fatalf("Unnamed answers %s for two different elements", base)
		}
	}
	if Unnamed("g", "n", "series", 1) != base || len(base) != 16 {
		t.Fatalf("Unnamed is not a stable 16-digit id: %s", base)
	}
}

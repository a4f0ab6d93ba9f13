package textmatch

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	for _, c := range []struct {
		analyzer, in string
		want         []string
	}{
		{Keyword, "GET /Users/{id}", []string{"GET /Users/{id}"}},
		{Standard, "Connection refused: db-01.local, retry 3", []string{"connection", "refused", "db", "01", "local", "retry", "3"}},
		{Simple, "Response time of service A is more than 1000ms", []string{"response", "time", "of", "service", "a", "is", "more", "than", "ms"}},
		{URL, "https://www.example.com/path?query=123", []string{"https", "www", "example", "com", "path", "query", "123"}},
		{URL, "ftp://user:pass@ftp.example.com:21/path", []string{"ftp", "user", "pass", "ftp", "example", "com", "21", "path"}},
		{URL, "/Users/GetByID", []string{"Users", "GetByID"}},
	} {
		if got := Terms(c.analyzer, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s(%q) = %q, want %q", c.analyzer, c.in, got, c.want)
		}
	}
	if Terms("nope", "x") != nil || Known("nope") || !Known(URL) {
		t.Error("an unknown analyzer is known")
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		name     string
		analyzer string
		queries  []string
		and      bool
		stored   string
		want     bool
	}{
		{"or: one token enough", Simple, []string{"latency timeout"}, false, "service latency is high", true},
		{"and: every token", Simple, []string{"latency timeout"}, true, "service latency is high", false},
		{"and: all present", Simple, []string{"latency high"}, true, "service latency is HIGH", true},
		{"case folded by simple", Simple, []string{"LATENCY"}, false, "latency", true},
		{"url keeps case", URL, []string{"users"}, false, "/Users/list", false},
		{"url path part", URL, []string{"Users"}, false, "/Users/list", true},
		{"keyword is whole", Keyword, []string{"GET /a"}, false, "GET /a", true},
		{"keyword part", Keyword, []string{"GET"}, false, "GET /a", false},
		{"several queries: each must match", Standard, []string{"db", "retry"}, false, "db down, retry", true},
		{"several queries: one misses", Standard, []string{"db", "nope"}, false, "db down, retry", false},
		{"a query of no tokens", Simple, []string{"123"}, false, "123", false},
		{"no query", Simple, nil, false, "x", false},
	} {
		m, ok := New(c.analyzer, c.queries, c.and)
		if !ok {
			t.Fatalf("%s: analyzer %q unknown", c.name, c.analyzer)
		}
		if got := m.Match(c.stored); got != c.want {
			t.Errorf("%s: Match(%q) = %v, want %v", c.name, c.stored, got, c.want)
		}
	}
}

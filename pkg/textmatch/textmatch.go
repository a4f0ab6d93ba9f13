// Package textmatch evaluates BanyanDB's MATCH condition against one
// stored string: the analyzers BanyanDB index rules name (keyword,
// standard, simple, url), built from bluge's analysis package as BanyanDB
// builds them, so a value splits into the same tokens, and the match rule
// of its inverted index: each query string is analyzed, and matches when
// any (OR, the default) or every (AND) of its tokens is one of the stored
// value's; a query of several strings matches when each of them does.
package textmatch

import (
	"bytes"
	"slices"
	"unicode"

	"github.com/blugelabs/bluge/analysis"
	"github.com/blugelabs/bluge/analysis/analyzer"
	"github.com/blugelabs/bluge/analysis/tokenizer"
)

// The analyzer names of BanyanDB index rules and match options.
const (
	Keyword  = "keyword"
	Standard = "standard"
	Simple   = "simple"
	URL      = "url"
)

// analyzers are built once: they hold no state between calls.
var analyzers = map[string]*analysis.Analyzer{
	Keyword:  analyzer.NewKeywordAnalyzer(),
	Standard: analyzer.NewStandardAnalyzer(),
	Simple:   analyzer.NewSimpleAnalyzer(),
	URL:      newURLAnalyzer(),
}

// Known reports whether name is an analyzer this package has.
func Known(name string) bool { _, ok := analyzers[name]; return ok }

// Matcher matches stored values against the query strings of one
// condition. It is safe for concurrent use.
type Matcher struct {
	a       *analysis.Analyzer
	queries [][][]byte // each query string's tokens
	and     bool
}

// New returns the matcher of queries under analyzer name; and says every
// token of a query must match (OPERATOR_AND) rather than any. ok is false
// for an unknown analyzer.
func New(name string, queries []string, and bool) (*Matcher, bool) {
	a, ok := analyzers[name]
	if !ok {
		return nil, false
	}
	m := &Matcher{a: a, and: and}
	for _, q := range queries {
		m.queries = append(m.queries, terms(a, q))
	}
	return m, true
}

// Match reports whether the stored value matches every query.
func (m *Matcher) Match(stored string) bool {
	if len(m.queries) == 0 {
		return false
	}
	have := terms(m.a, stored)
	for _, q := range m.queries {
		if !m.matchOne(have, q) {
			return false
		}
	}
	return true
}

func (m *Matcher) matchOne(have, query [][]byte) bool {
	if len(query) == 0 {
		return false // a query that analyzes to nothing matches nothing
	}
	for _, t := range query {
		found := slices.ContainsFunc(have, func(h []byte) bool { return bytes.Equal(h, t) })
		if found && !m.and {
			return true
		}
		if !found && m.and {
			return false
		}
	}
	return m.and
}

// Terms returns the tokens analyzer name splits s into, for tests and
// tools; nil for an unknown analyzer.
func Terms(name, s string) []string {
	a, ok := analyzers[name]
	if !ok {
		return nil
	}
	var out []string
	for _, t := range terms(a, s) {
		out = append(out, string(t))
	}
	return out
}

func terms(a *analysis.Analyzer, s string) [][]byte {
	ts := a.Analyze([]byte(s))
	out := make([][]byte, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Term)
	}
	return out
}

// newURLAnalyzer splits at every rune that is neither a letter nor a
// digit and keeps case, as BanyanDB's url analyzer does.
func newURLAnalyzer() *analysis.Analyzer {
	return &analysis.Analyzer{
		Tokenizer: tokenizer.NewCharacterTokenizer(func(r rune) bool {
			return unicode.IsLetter(r) || unicode.IsNumber(r)
		}),
	}
}

package storage

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/tagindex"
	"github.com/banyand-io/banyand/pkg/textmatch"
)

// termQuery is the part of a query's criteria that tag indexes answer
// (docs/design/indexes.md): it finds a set of records holding every record
// the criteria accept, and usually few more; the criteria are then
// evaluated on each record read. nil means the indexes cannot narrow the
// query.
type termQuery struct {
	op   logicalOp
	kids []*termQuery // and, or
	// A leaf: the records that the terms of one tag find, any of them
	// (or every one, when all), as indexed with analyzer; or, when
	// ranged, the records whose int value is in [lo, hi].
	tag, analyzer string
	terms         [][]byte
	all           bool
	ranged        bool
	lo, hi        int64
}

type logicalOp int

const (
	opLeaf logicalOp = iota
	opAnd
	opOr
)

// compileTerms derives the term query of criteria c; nil when no part of
// it can use an index.
func compileTerms(c *modelv1.Criteria) *termQuery {
	switch e := c.GetExp().(type) {
	case *modelv1.Criteria_Condition:
		return conditionTerms(e.Condition)
	case *modelv1.Criteria_Le:
		left, right := compileTerms(e.Le.GetLeft()), compileTerms(e.Le.GetRight())
		// A missing side places no constraint (compileNode).
		switch {
		case e.Le.GetLeft() == nil || e.Le.GetLeft().GetExp() == nil:
			return right
		case e.Le.GetRight() == nil || e.Le.GetRight().GetExp() == nil:
			return left
		}
		if e.Le.GetOp() == modelv1.LogicalExpression_LOGICAL_OP_AND {
			switch {
			case left == nil:
				return right
			case right == nil:
				return left
			}
			return &termQuery{op: opAnd, kids: []*termQuery{left, right}}
		}
		if left == nil || right == nil {
			return nil // a side the indexes cannot narrow may accept anything
		}
		return &termQuery{op: opOr, kids: []*termQuery{left, right}}
	}
	return nil
}

// conditionTerms is the term query of one condition: equality, IN,
// HAVING and MATCH find their records by term; the others (NE, NOT_IN,
// NOT_HAVING, ranges, a null or array EQ, HAVING nothing) do not.
func conditionTerms(c *modelv1.Condition) *termQuery {
	leaf := &termQuery{tag: c.GetName()}
	add := func(kind byte, value []byte) {
		leaf.terms = append(leaf.terms, tagindex.Series(nil, leaf.tag, kind, value))
	}
	v := c.GetValue()
	switch c.GetOp() {
	case modelv1.Condition_BINARY_OP_EQ:
		switch x := v.GetValue().(type) {
		case *modelv1.TagValue_Str:
			add(tagindex.KindStr, []byte(x.Str.GetValue()))
		case *modelv1.TagValue_Int:
			add(tagindex.KindInt, tagindex.IntValue(nil, x.Int.GetValue()))
		case *modelv1.TagValue_Timestamp:
			add(tagindex.KindTime, tagindex.TimeValue(nil, x.Timestamp.GetSeconds(), x.Timestamp.GetNanos()))
		default:
			return nil
		}
	case modelv1.Condition_BINARY_OP_IN:
		switch x := v.GetValue().(type) {
		case *modelv1.TagValue_StrArray:
			for _, s := range x.StrArray.GetValue() {
				add(tagindex.KindStr, []byte(s))
			}
		case *modelv1.TagValue_IntArray:
			for _, i := range x.IntArray.GetValue() {
				add(tagindex.KindInt, tagindex.IntValue(nil, i))
			}
		default:
			return nil
		}
	case modelv1.Condition_BINARY_OP_HAVING:
		leaf.all = true
		switch x := v.GetValue().(type) {
		case *modelv1.TagValue_StrArray:
			for _, s := range x.StrArray.GetValue() {
				add(tagindex.KindStrItem, []byte(s))
			}
		case *modelv1.TagValue_IntArray:
			for _, i := range x.IntArray.GetValue() {
				add(tagindex.KindIntItem, tagindex.IntValue(nil, i))
			}
		default:
			return nil
		}
		if len(leaf.terms) == 0 {
			return nil // holding every one of nothing: every record
		}
	case modelv1.Condition_BINARY_OP_MATCH:
		return matchTerms(c)
	case modelv1.Condition_BINARY_OP_LT, modelv1.Condition_BINARY_OP_LE,
		modelv1.Condition_BINARY_OP_GT, modelv1.Condition_BINARY_OP_GE:
		return rangeTerms(c)
	default:
		return nil
	}
	return leaf
}

// matchTerms: a MATCH accepts a record when each query string matches,
// one of its tokens (every one, with OPERATOR_AND) being a token of the
// value. A query string without tokens matches nothing (pkg/textmatch).
func matchTerms(c *modelv1.Condition) *termQuery {
	queries, _ := matchQueries(c)
	analyzer := c.GetMatchOption().GetAnalyzer()
	if len(queries) == 0 || !textmatch.Known(analyzer) {
		return nil
	}
	and := &termQuery{op: opAnd}
	for _, q := range queries {
		leaf := &termQuery{tag: c.GetName(), analyzer: analyzer, all: c.GetMatchOption().GetOperator() == modelv1.Condition_MatchOption_OPERATOR_AND}
		tokens := textmatch.Terms(analyzer, q)
		if len(tokens) == 0 {
			leaf.all = false // finds nothing, as it matches nothing
		}
		for _, t := range tokens {
			leaf.terms = append(leaf.terms, tagindex.TokenSeries(nil, leaf.tag, analyzer, []byte(t)))
		}
		and.kids = append(and.kids, leaf)
	}
	if len(and.kids) == 1 {
		return and.kids[0]
	}
	return and
}

// rangeTerms: an order condition on an int value reads the tag's sorted
// values in [lo, hi] (an int compares only with ints).
func rangeTerms(c *modelv1.Condition) *termQuery {
	x, ok := c.GetValue().GetValue().(*modelv1.TagValue_Int)
	if !ok {
		return nil
	}
	v := x.Int.GetValue()
	leaf := &termQuery{tag: c.GetName(), ranged: true, lo: math.MinInt64, hi: math.MaxInt64}
	switch c.GetOp() {
	case modelv1.Condition_BINARY_OP_LT:
		if v == math.MinInt64 {
			return &termQuery{tag: c.GetName()} // finds nothing
		}
		leaf.hi = v - 1
	case modelv1.Condition_BINARY_OP_LE:
		leaf.hi = v
	case modelv1.Condition_BINARY_OP_GT:
		if v == math.MaxInt64 {
			return &termQuery{tag: c.GetName()}
		}
		leaf.lo = v + 1
	default:
		leaf.lo = v
	}
	return leaf
}

// maxIndexRefs bounds the records an index lookup reads in one segment:
// past it reading the segment whole is as cheap, and bounded.
const maxIndexRefs = 200_000

// errTooManyRefs says an index lookup would read more than maxIndexRefs.
var errTooManyRefs = errors.New("storage: index finds too many records")

// refSet is a set of records of one segment.
type refSet map[tsdb.Ref]struct{}

// indexRefs returns the records of seg that q finds, in key order, and
// whether the segment's indexes could answer q at all: every write into
// it was indexed for the tags q uses (its index specs), and q finds at
// most maxIndexRefs records.
func (s *Store) indexRefs(ctx context.Context, db *tsdb.DB, seg tsdb.Segment, name string, begin, end int64, q *termQuery) ([]tsdb.Ref, bool, error) {
	e, ok, err := segmentEval(ctx, db, seg, name, begin, end)
	if err != nil || !ok {
		return nil, false, err
	}
	set, ok, err := e.eval(q)
	switch {
	case errors.Is(err, errTooManyRefs):
		return nil, false, nil
	case err != nil || !ok:
		return nil, false, err
	}
	refs := make([]tsdb.Ref, 0, len(set))
	for r := range set {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b tsdb.Ref) int {
		return cmp.Or(cmp.Compare(a.SeriesHash, b.SeriesHash), cmp.Compare(a.Timestamp, b.Timestamp), strings.Compare(a.ElementID, b.ElementID))
	})
	return refs, true, nil
}

// segmentEval reads the index specs of seg; ok is false when it has none
// (nothing indexed) or one that does not decode.
func segmentEval(ctx context.Context, db *tsdb.DB, seg tsdb.Segment, name string, begin, end int64) (*termEval, bool, error) {
	raw, err := db.IndexSpecs(ctx, seg, name)
	if err != nil || len(raw) == 0 {
		return nil, false, err
	}
	e := &termEval{ctx: ctx, db: db, seg: seg, name: name, begin: begin, end: end}
	for _, b := range raw {
		spec, perr := tagindex.Parse(b)
		if perr != nil {
			return nil, false, nil //nolint:nilerr // a spec this build cannot read: read the segment whole
		}
		e.specs = append(e.specs, spec)
	}
	return e, true, nil
}

type termEval struct {
	ctx        context.Context
	db         *tsdb.DB
	seg        tsdb.Segment
	name       string
	begin, end int64
	specs      []tagindex.Spec
}

// covered reports whether every write of the segment indexed tag with
// analyzer.
func (e *termEval) covered(tag, analyzer string) bool {
	for _, s := range e.specs {
		if !s.Covers(tag, analyzer) {
			return false
		}
	}
	return true
}

// eval returns the records q finds; ok is false when the indexes cannot
// narrow q in this segment.
func (e *termEval) eval(q *termQuery) (refSet, bool, error) {
	switch q.op {
	case opAnd:
		var out refSet
		known := false
		for _, k := range q.kids {
			set, ok, err := e.eval(k)
			if err != nil && !errors.Is(err, errTooManyRefs) {
				return nil, false, err
			}
			if !ok {
				continue // narrowed by the others; the criteria decide
			}
			if !known {
				out, known = set, true
				continue
			}
			for r := range out {
				if _, in := set[r]; !in {
					delete(out, r)
				}
			}
		}
		return out, known, nil
	case opOr:
		out := refSet{}
		for _, k := range q.kids {
			set, ok, err := e.eval(k)
			if err != nil || !ok {
				return nil, false, err
			}
			for r := range set {
				out[r] = struct{}{}
			}
			if len(out) > maxIndexRefs {
				return nil, false, errTooManyRefs
			}
		}
		return out, true, nil
	}
	if q.ranged {
		return e.evalRange(q)
	}
	if !e.covered(q.tag, q.analyzer) {
		return nil, false, nil
	}
	var out refSet
	for i, t := range q.terms {
		set := refSet{}
		err := e.db.IndexRefs(e.ctx, e.seg, e.name, t, e.begin, e.end, false, func(r tsdb.Ref) error {
			if q.all && i > 0 {
				if _, in := out[r]; !in {
					return nil
				}
			}
			set[r] = struct{}{}
			if len(set) > maxIndexRefs {
				return errTooManyRefs
			}
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		switch {
		case out == nil || q.all:
			out = set
		default:
			for r := range set {
				out[r] = struct{}{}
			}
			if len(out) > maxIndexRefs {
				return nil, false, errTooManyRefs
			}
		}
	}
	if out == nil {
		out = refSet{}
	}
	return out, true, nil
}

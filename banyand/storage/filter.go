package storage

import (
	"bytes"
	"fmt"
	"slices"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/textmatch"
)

// predicate reports whether a stored value's tags match the criteria.
type predicate func(tfs []*modelv1.TagFamilyForWrite) bool

// compiled is a query's criteria, resolved against the schema.
type compiled struct {
	// match is nil when there are no criteria.
	match predicate
	// eq holds the EQ conditions every match must satisfy (those reached
	// from the root through AND only), by tag name: enough to compute the
	// series key when they cover the entity.
	eq map[string]*modelv1.TagValue
}

// compileCriteria resolves c against l. Conditions on unknown tags are
// invalid; operators this engine does not evaluate are ErrUnimplemented.
func compileCriteria(c *modelv1.Criteria, l *tagLayout) (compiled, error) {
	out := compiled{eq: make(map[string]*modelv1.TagValue)}
	if c == nil || c.GetExp() == nil {
		return out, nil
	}
	p, err := compileNode(c, l, out.eq, true)
	if err != nil {
		return compiled{}, err
	}
	out.match = p
	return out, nil
}

func compileNode(c *modelv1.Criteria, l *tagLayout, eq map[string]*modelv1.TagValue, andPath bool) (predicate, error) {
	switch e := c.GetExp().(type) {
	case nil:
		return nil, nil
	case *modelv1.Criteria_Condition:
		return compileCondition(e.Condition, l, eq, andPath)
	case *modelv1.Criteria_Le:
		op := e.Le.GetOp()
		if op != modelv1.LogicalExpression_LOGICAL_OP_AND && op != modelv1.LogicalExpression_LOGICAL_OP_OR {
			return nil, fmt.Errorf("%w: logical operator %v", errInvalidQuery, op)
		}
		sub := andPath && op == modelv1.LogicalExpression_LOGICAL_OP_AND
		var left, right predicate
		var err error
		if e.Le.GetLeft() != nil {
			if left, err = compileNode(e.Le.GetLeft(), l, eq, sub); err != nil {
				return nil, err
			}
		}
		if e.Le.GetRight() != nil {
			if right, err = compileNode(e.Le.GetRight(), l, eq, sub); err != nil {
				return nil, err
			}
		}
		// A missing side places no constraint.
		switch {
		case left == nil:
			return right, nil
		case right == nil:
			return left, nil
		case op == modelv1.LogicalExpression_LOGICAL_OP_AND:
			return func(t []*modelv1.TagFamilyForWrite) bool { return left(t) && right(t) }, nil
		default:
			return func(t []*modelv1.TagFamilyForWrite) bool { return left(t) || right(t) }, nil
		}
	default:
		return nil, fmt.Errorf("%w: criteria %T", ErrUnimplemented, e)
	}
}

func compileCondition(c *modelv1.Condition, l *tagLayout, eq map[string]*modelv1.TagValue, andPath bool) (predicate, error) {
	ref, err := l.tag(c.GetName())
	if err != nil {
		return nil, err
	}
	want := c.GetValue()
	if want.GetValue() == nil {
		return nil, fmt.Errorf("%w: condition on %q has no value", errInvalidQuery, c.GetName())
	}
	switch op := c.GetOp(); op {
	case modelv1.Condition_BINARY_OP_EQ:
		if andPath {
			if _, seen := eq[ref.name]; !seen {
				eq[ref.name] = want
			}
		}
		return func(t []*modelv1.TagFamilyForWrite) bool { return tagEqual(lookup(t, ref), want) }, nil
	case modelv1.Condition_BINARY_OP_NE:
		return func(t []*modelv1.TagFamilyForWrite) bool { return !tagEqual(lookup(t, ref), want) }, nil
	case modelv1.Condition_BINARY_OP_LT, modelv1.Condition_BINARY_OP_GT,
		modelv1.Condition_BINARY_OP_LE, modelv1.Condition_BINARY_OP_GE:
		switch want.GetValue().(type) {
		case *modelv1.TagValue_Int, *modelv1.TagValue_Str, *modelv1.TagValue_Timestamp:
		default:
			return nil, fmt.Errorf("%w: %v on a %s value (only int, string and timestamp order)", ErrUnimplemented, op, schema.TagValueKind(want))
		}
		accept := orderAccepts(op)
		return func(t []*modelv1.TagFamilyForWrite) bool {
			c, ok := schema.CompareTagValues(lookup(t, ref), want)
			return ok && accept(c)
		}, nil
	case modelv1.Condition_BINARY_OP_IN, modelv1.Condition_BINARY_OP_NOT_IN:
		set, err := members(c.GetName(), op, want)
		if err != nil {
			return nil, err
		}
		in := op == modelv1.Condition_BINARY_OP_IN
		return func(t []*modelv1.TagFamilyForWrite) bool {
			v := lookup(t, ref)
			for _, m := range set {
				if tagEqual(v, m) {
					return in
				}
			}
			return !in
		}, nil
	case modelv1.Condition_BINARY_OP_HAVING, modelv1.Condition_BINARY_OP_NOT_HAVING:
		tt := l.families[ref.family].GetTags()[ref.tag].GetType()
		if tt != databasev1.TagType_TAG_TYPE_STRING_ARRAY && tt != databasev1.TagType_TAG_TYPE_INT_ARRAY {
			return nil, fmt.Errorf("%w: %v on %q, a %s tag: only array tags have members", errInvalidQuery, op, c.GetName(), tt)
		}
		set, err := members(c.GetName(), op, want)
		if err != nil {
			return nil, err
		}
		having := op == modelv1.Condition_BINARY_OP_HAVING
		return func(t []*modelv1.TagFamilyForWrite) bool { return hasAll(lookup(t, ref), set) == having }, nil
	case modelv1.Condition_BINARY_OP_MATCH:
		return compileMatch(c, l, ref)
	case modelv1.Condition_BINARY_OP_UNSPECIFIED:
		return nil, fmt.Errorf("%w: condition on %q has no operator", errInvalidQuery, c.GetName())
	default:
		return nil, fmt.Errorf("%w: condition operator %v", ErrUnimplemented, op)
	}
}

// compileMatch compiles a MATCH: the liaison has filled in the analyzer
// (the condition's own, or the one of the index rule covering the tag). A
// string value is one query, a string array several, each to match.
func compileMatch(c *modelv1.Condition, l *tagLayout, ref tagRef) (predicate, error) {
	if tt := l.families[ref.family].GetTags()[ref.tag].GetType(); tt != databasev1.TagType_TAG_TYPE_STRING {
		return nil, fmt.Errorf("%w: MATCH on %q, a %s tag: only string tags are analyzed", errInvalidQuery, c.GetName(), tt)
	}
	queries, ok := matchQueries(c)
	if !ok {
		return nil, fmt.Errorf("%w: MATCH on %q needs a str or str_array value, not %s", errInvalidQuery, c.GetName(), schema.TagValueKind(c.GetValue()))
	}
	opt := c.GetMatchOption()
	m, ok := textmatch.New(opt.GetAnalyzer(), queries, opt.GetOperator() == modelv1.Condition_MatchOption_OPERATOR_AND)
	if !ok {
		return nil, fmt.Errorf("%w: MATCH on %q with analyzer %q: not one of keyword, standard, simple, url", errInvalidQuery, c.GetName(), opt.GetAnalyzer())
	}
	return func(t []*modelv1.TagFamilyForWrite) bool {
		v, ok := lookup(t, ref).GetValue().(*modelv1.TagValue_Str)
		return ok && m.Match(v.Str.GetValue())
	}, nil
}

// matchQueries are the query strings of a MATCH: a str value is one, a
// str_array several, each to match; false for another value.
func matchQueries(c *modelv1.Condition) ([]string, bool) {
	switch x := c.GetValue().GetValue().(type) {
	case *modelv1.TagValue_Str:
		return []string{x.Str.GetValue()}, true
	case *modelv1.TagValue_StrArray:
		return x.StrArray.GetValue(), true
	}
	return nil, false
}

// hasAll reports whether the stored array v holds every value of set
// (HAVING: "the tag contains valueA and valueB"); a null or scalar value
// holds none.
func hasAll(v *modelv1.TagValue, set []*modelv1.TagValue) bool {
	for _, m := range set {
		found := false
		switch x := v.GetValue().(type) {
		case *modelv1.TagValue_StrArray:
			found = slices.Contains(x.StrArray.GetValue(), m.GetStr().GetValue()) && m.GetStr() != nil
		case *modelv1.TagValue_IntArray:
			found = slices.Contains(x.IntArray.GetValue(), m.GetInt().GetValue()) && m.GetInt() != nil
		}
		if !found {
			return false
		}
	}
	return true
}

// members are the values an IN, NOT_IN, HAVING or NOT_HAVING condition
// lists: its value is a str_array or int_array; a scalar tag matches IN
// when it equals one, an array tag HAVING when it holds them all.
func members(tag string, op modelv1.Condition_BinaryOp, want *modelv1.TagValue) ([]*modelv1.TagValue, error) {
	var set []*modelv1.TagValue
	switch x := want.GetValue().(type) {
	case *modelv1.TagValue_StrArray:
		for _, s := range x.StrArray.GetValue() {
			set = append(set, &modelv1.TagValue{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: s}}})
		}
	case *modelv1.TagValue_IntArray:
		for _, i := range x.IntArray.GetValue() {
			set = append(set, &modelv1.TagValue{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: i}}})
		}
	default:
		return nil, fmt.Errorf("%w: %v on %q needs a str_array or int_array value, not %s", errInvalidQuery, op, tag, schema.TagValueKind(want))
	}
	return set, nil
}

func orderAccepts(op modelv1.Condition_BinaryOp) func(int) bool {
	switch op {
	case modelv1.Condition_BINARY_OP_LT:
		return func(c int) bool { return c < 0 }
	case modelv1.Condition_BINARY_OP_GT:
		return func(c int) bool { return c > 0 }
	case modelv1.Condition_BINARY_OP_LE:
		return func(c int) bool { return c <= 0 }
	default:
		return func(c int) bool { return c >= 0 }
	}
}

// tagEqual compares a stored value (nil is null) with a query value. Values
// of different types are never equal.
func tagEqual(got, want *modelv1.TagValue) bool {
	switch w := want.GetValue().(type) {
	case *modelv1.TagValue_Null:
		return got.GetValue() == nil || isNull(got)
	case *modelv1.TagValue_Str:
		g, ok := got.GetValue().(*modelv1.TagValue_Str)
		return ok && g.Str.GetValue() == w.Str.GetValue()
	case *modelv1.TagValue_Int:
		g, ok := got.GetValue().(*modelv1.TagValue_Int)
		return ok && g.Int.GetValue() == w.Int.GetValue()
	case *modelv1.TagValue_StrArray:
		g, ok := got.GetValue().(*modelv1.TagValue_StrArray)
		return ok && slices.Equal(g.StrArray.GetValue(), w.StrArray.GetValue())
	case *modelv1.TagValue_IntArray:
		g, ok := got.GetValue().(*modelv1.TagValue_IntArray)
		return ok && slices.Equal(g.IntArray.GetValue(), w.IntArray.GetValue())
	case *modelv1.TagValue_BinaryData:
		g, ok := got.GetValue().(*modelv1.TagValue_BinaryData)
		return ok && bytes.Equal(g.BinaryData, w.BinaryData)
	case *modelv1.TagValue_Timestamp:
		g, ok := got.GetValue().(*modelv1.TagValue_Timestamp)
		return ok && g.Timestamp.GetSeconds() == w.Timestamp.GetSeconds() && g.Timestamp.GetNanos() == w.Timestamp.GetNanos()
	}
	return false
}

func isNull(v *modelv1.TagValue) bool {
	_, ok := v.GetValue().(*modelv1.TagValue_Null)
	return ok
}

// seriesKey computes the series key of name when eq fixes every entity tag;
// ok is false when it does not (the query must scan every series).
func seriesKey(name string, entity []string, eq map[string]*modelv1.TagValue) (key []byte, ok bool) {
	if len(entity) == 0 {
		return nil, false
	}
	vals := make([]route.EntityValue, len(entity))
	for i, tag := range entity {
		v, found := eq[tag]
		if !found {
			return nil, false
		}
		ev, err := schema.EntityValue(v)
		if err != nil {
			return nil, false
		}
		vals[i] = ev
	}
	key, err := route.AppendSeriesKey(nil, name, vals)
	return key, err == nil
}

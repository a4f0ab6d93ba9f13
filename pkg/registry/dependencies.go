package registry

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// ErrDependencyNotFound: an object names another (an index rule, a
// binding's subject, a TopN aggregation's source measure) that does not
// exist. It is also an ErrFailedPrecondition.
var ErrDependencyNotFound = fmt.Errorf("not found: %w", ErrFailedPrecondition)

// Dependencies lists the objects a member needs in the registry before it
// may be stored, its group first; then, for an index rule binding, its rules
// and subject, and for a TopN aggregation, its source measure. Groups depend
// on nothing. Stores read these, check them with CheckDependencies, and
// write only if none changed in between.
func Dependencies(k Key, m proto.Message) []Key {
	if k.Kind == KindGroup {
		return nil
	}
	deps := []Key{GroupKey(k.Group)}
	switch v := m.(type) {
	case *databasev1.IndexRuleBinding:
		for _, r := range v.GetRules() {
			deps = append(deps, Key{Kind: KindIndexRule, Group: k.Group, Name: r})
		}
		if kind, ok := subjectKinds[v.GetSubject().GetCatalog()]; ok {
			deps = append(deps, Key{Kind: kind, Group: k.Group, Name: v.GetSubject().GetName()})
		}
	case *databasev1.TopNAggregation:
		src := v.GetSourceMeasure()
		deps = append(deps, MeasureKey(src.GetGroup(), src.GetName()))
	}
	return deps
}

// CheckDependencies checks a validated member against the objects
// Dependencies named; found holds those that exist. It returns
// ErrGroupNotFound or an ErrFailedPrecondition for a missing group or a
// group of the wrong catalog, ErrDependencyNotFound for another missing
// object, and an *InvalidArgumentError for a reference that does not fit
// (a rule on a tag its subject lacks, a TopN field the measure lacks).
func CheckDependencies(k Key, m proto.Message, found map[Key]proto.Message) error {
	if k.Kind == KindGroup {
		return nil
	}
	g, _ := found[GroupKey(k.Group)].(*commonv1.Group)
	if err := CheckGroup(k, g); err != nil {
		return err
	}
	missing := func(dep Key) error { return fmt.Errorf("%s: %s: %w", k, dep, ErrDependencyNotFound) }
	switch v := m.(type) {
	case *databasev1.IndexRuleBinding:
		subject := Key{Kind: subjectKinds[v.GetSubject().GetCatalog()], Group: k.Group, Name: v.GetSubject().GetName()}
		if c := v.GetSubject().GetCatalog(); c != g.GetCatalog() {
			return invalid("index_rule_binding.subject.catalog", "%s, but group %q is %s", c, k.Group, g.GetCatalog())
		}
		sm, ok := found[subject]
		if !ok {
			return missing(subject)
		}
		tags := TagNames(sm)
		for i, name := range v.GetRules() {
			rk := Key{Kind: KindIndexRule, Group: k.Group, Name: name}
			r, ok := found[rk].(*databasev1.IndexRule)
			if !ok {
				return missing(rk)
			}
			for _, t := range r.GetTags() {
				if !tags[t] {
					return invalid(fmt.Sprintf("index_rule_binding.rules[%d]", i),
						"index rule %q indexes tag %q, which %s does not declare", name, t, subject)
				}
			}
		}
	case *databasev1.TopNAggregation:
		src := MeasureKey(v.GetSourceMeasure().GetGroup(), v.GetSourceMeasure().GetName())
		sm, ok := found[src].(*databasev1.Measure)
		if !ok {
			return missing(src)
		}
		if !fieldNames(sm)[v.GetFieldName()] {
			return invalid("top_n_aggregation.field_name", "%s has no field %q", src, v.GetFieldName())
		}
		tags := TagNames(sm)
		for i, t := range v.GetGroupByTagNames() {
			if !tags[t] {
				return invalid(fmt.Sprintf("top_n_aggregation.group_by_tag_names[%d]", i), "%s has no tag %q", src, t)
			}
		}
	}
	return nil
}

// TagNames is the set of tags a stream, measure, trace or property
// declares.
func TagNames(m proto.Message) map[string]bool {
	names := map[string]bool{}
	var fams []*databasev1.TagFamilySpec
	switch v := m.(type) {
	case *databasev1.Stream:
		fams = v.GetTagFamilies()
	case *databasev1.Measure:
		fams = v.GetTagFamilies()
	case *databasev1.Trace:
		for _, t := range v.GetTags() {
			names[t.GetName()] = true
		}
	case *databasev1.Property:
		for _, t := range v.GetTags() {
			names[t.GetName()] = true
		}
	}
	for _, f := range fams {
		for _, t := range f.GetTags() {
			names[t.GetName()] = true
		}
	}
	return names
}

func fieldNames(m *databasev1.Measure) map[string]bool {
	names := make(map[string]bool, len(m.GetFields()))
	for _, f := range m.GetFields() {
		names[f.GetName()] = true
	}
	return names
}

// CheckUpdate checks that next may replace old, the object stored under
// the same key: a group keeps its catalog (its members depend on it), and a
// trace keeps its trace id, span id and timestamp tags, as BanyanDB
// requires.
func CheckUpdate(old, next proto.Message) error {
	switch n := next.(type) {
	case *commonv1.Group:
		if c := old.(*commonv1.Group).GetCatalog(); c != n.GetCatalog() {
			return invalid("group.catalog", "cannot change from %s to %s", c, n.GetCatalog())
		}
	case *databasev1.Trace:
		kept := TagNames(n)
		prev := TagNames(old)
		for _, t := range []string{n.GetTraceIdTagName(), n.GetSpanIdTagName(), n.GetTimestampTagName()} {
			if prev[t] && !kept[t] {
				return invalid("trace.tags", "cannot remove tag %q: it is the trace's id, span id or timestamp tag", t)
			}
		}
	}
	return nil
}

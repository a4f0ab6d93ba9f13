package registry

import (
	"fmt"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// Analyzers are the text analyzers an inverted index rule may name, as
// BanyanDB v0.10 defines them; "" indexes each value whole.
var Analyzers = map[string]bool{"": true, "keyword": true, "standard": true, "simple": true, "url": true}

// validNames checks a list of names that must be non-empty, valid and
// unique; at least one is required when required is set.
func validNames(field string, names []string, required bool) error {
	if required && len(names) == 0 {
		return invalid(field, "at least one is required")
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := validName(f, n); err != nil {
			return err
		}
		if seen[n] {
			return invalid(f, "duplicate %q", n)
		}
		seen[n] = true
	}
	return nil
}

func validateIndexRule(r *databasev1.IndexRule) error {
	if err := validMember("index_rule", r.GetMetadata()); err != nil {
		return err
	}
	if err := validNames("index_rule.tags", r.GetTags(), true); err != nil {
		return err
	}
	switch t := r.GetType(); {
	case t == databasev1.IndexRule_TYPE_UNSPECIFIED:
		return invalid("index_rule.type", "required")
	case databasev1.IndexRule_Type_name[int32(t)] == "":
		return invalid("index_rule.type", "unknown value %d", int32(t))
	}
	if !Analyzers[r.GetAnalyzer()] {
		return invalid("index_rule.analyzer", "%q is not one of keyword, standard, simple, url", r.GetAnalyzer())
	}
	return nil
}

// MaxBindingRules bounds the rules of one binding: a write checks them all
// in one etcd transaction, whose size etcd limits.
const MaxBindingRules = 100

// subjectKinds maps a binding subject's catalog to the kind it names.
var subjectKinds = map[commonv1.Catalog]Kind{
	commonv1.Catalog_CATALOG_STREAM:  KindStream,
	commonv1.Catalog_CATALOG_MEASURE: KindMeasure,
	commonv1.Catalog_CATALOG_TRACE:   KindTrace,
}

func validateIndexRuleBinding(b *databasev1.IndexRuleBinding) error {
	if err := validMember("index_rule_binding", b.GetMetadata()); err != nil {
		return err
	}
	if err := validNames("index_rule_binding.rules", b.GetRules(), true); err != nil {
		return err
	}
	if len(b.GetRules()) > MaxBindingRules {
		return invalid("index_rule_binding.rules", "%d rules, at most %d", len(b.GetRules()), MaxBindingRules)
	}
	sub := b.GetSubject()
	if sub == nil {
		return invalid("index_rule_binding.subject", "required")
	}
	if err := validName("index_rule_binding.subject.name", sub.GetName()); err != nil {
		return err
	}
	if _, ok := subjectKinds[sub.GetCatalog()]; !ok {
		return invalid("index_rule_binding.subject.catalog", "must be CATALOG_STREAM, CATALOG_MEASURE or CATALOG_TRACE, got %s", sub.GetCatalog())
	}
	begin, expire := b.GetBeginAt(), b.GetExpireAt()
	switch {
	case begin == nil:
		return invalid("index_rule_binding.begin_at", "required")
	case expire == nil:
		return invalid("index_rule_binding.expire_at", "required")
	case begin.CheckValid() != nil:
		return invalid("index_rule_binding.begin_at", "%v", begin.CheckValid())
	case expire.CheckValid() != nil:
		return invalid("index_rule_binding.expire_at", "%v", expire.CheckValid())
	case !expire.AsTime().After(begin.AsTime()):
		return invalid("index_rule_binding.expire_at", "must be after begin_at")
	}
	return nil
}

func validateTopNAggregation(a *databasev1.TopNAggregation) error {
	if err := validMember("top_n_aggregation", a.GetMetadata()); err != nil {
		return err
	}
	src := a.GetSourceMeasure()
	if src == nil {
		return invalid("top_n_aggregation.source_measure", "required")
	}
	if err := validMember("top_n_aggregation.source", src); err != nil {
		return err
	}
	if err := validName("top_n_aggregation.field_name", a.GetFieldName()); err != nil {
		return err
	}
	if modelv1.Sort_name[int32(a.GetFieldValueSort())] == "" {
		return invalid("top_n_aggregation.field_value_sort", "unknown value %d", int32(a.GetFieldValueSort()))
	}
	if err := validNames("top_n_aggregation.group_by_tag_names", a.GetGroupByTagNames(), false); err != nil {
		return err
	}
	if a.GetCountersNumber() < 1 {
		return invalid("top_n_aggregation.counters_number", "must be at least 1, got %d", a.GetCountersNumber())
	}
	if a.GetLruSize() < 0 {
		return invalid("top_n_aggregation.lru_size", "must not be negative, got %d", a.GetLruSize())
	}
	return nil
}

func validateTrace(tr *databasev1.Trace) error {
	if err := validMember("trace", tr.GetMetadata()); err != nil {
		return err
	}
	types, err := validTagSpecs("trace.tags", tr.GetTags())
	if err != nil {
		return err
	}
	for _, f := range []struct{ field, name string }{
		{"trace.trace_id_tag_name", tr.GetTraceIdTagName()},
		{"trace.span_id_tag_name", tr.GetSpanIdTagName()},
		{"trace.timestamp_tag_name", tr.GetTimestampTagName()},
	} {
		if err := validName(f.field, f.name); err != nil {
			return err
		}
	}
	if t, ok := types[tr.GetTimestampTagName()]; ok && t != databasev1.TagType_TAG_TYPE_TIMESTAMP {
		return invalid("trace.timestamp_tag_name", "tag %q is %s, want TAG_TYPE_TIMESTAMP", tr.GetTimestampTagName(), t)
	}
	return nil
}

func validateProperty(p *databasev1.Property) error {
	if err := validMember("property", p.GetMetadata()); err != nil {
		return err
	}
	_, err := validTagSpecs("property.tags", p.GetTags())
	return err
}

// validTagSpecs checks a flat list of tag declarations (a trace's, a
// property's): at least one, each valid, names unique. It returns each
// tag's type by name.
func validTagSpecs[T interface {
	GetName() string
	GetType() databasev1.TagType
}](field string, specs []T) (map[string]databasev1.TagType, error) {
	if len(specs) == 0 {
		return nil, invalid(field, "at least one tag is required")
	}
	seen := make(map[string]bool, len(specs))
	types := make(map[string]databasev1.TagType, len(specs))
	for i, t := range specs {
		if err := validTag(fmt.Sprintf("%s[%d]", field, i), t.GetName(), t.GetType(), seen); err != nil {
			return nil, err
		}
		types[t.GetName()] = t.GetType()
	}
	return types, nil
}

package test

import (
	"sort"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/internal/oaplayout"
)

// The schema below is a representative part of what SkyWalking OAP 10.4
// installs, built the way its BanyanDB storage plugin builds it
// (MetadataRegistry, BanyanDBIndexInstaller, bydb.yml, bydb-topn.yml); the
// facts copied from there are named next to each piece.

// OAP's group names are "{namespace}_{group}" with namespace "sw".
const (
	oapMinute   = "sw_metricsMinute"
	oapHour     = "sw_metricsHour"
	oapDay      = "sw_metricsDay"
	oapRecords  = "sw_records"
	oapTrace    = "sw_trace"
	oapProperty = "sw_property"
)

// Tag family names of measures and streams (internal/oaplayout).
const (
	famSearchable  = oaplayout.Searchable
	famStorageOnly = oaplayout.StorageOnly
)

// oapGroupConf is one group section of bydb.yml (defaults; no warm or cold
// stage).
type oapGroupConf struct {
	catalog                      commonv1.Catalog
	shards, segmentDays, ttlDays uint32
}

// oapGroups are the bydb.yml defaults. sw_records takes the
// recordsBrowserErrorLog section: MetadataRegistry.parseMetadata hands that
// one to the RECORDS stream group.
var oapGroups = map[string]oapGroupConf{
	oapMinute:   {commonv1.Catalog_CATALOG_MEASURE, 2, 1, 7},
	oapHour:     {commonv1.Catalog_CATALOG_MEASURE, 1, 5, 15},
	oapDay:      {commonv1.Catalog_CATALOG_MEASURE, 1, 15, 15},
	oapRecords:  {commonv1.Catalog_CATALOG_STREAM, 2, 1, 3},
	oapTrace:    {commonv1.Catalog_CATALOG_TRACE, 2, 1, 3},
	oapProperty: {commonv1.Catalog_CATALOG_PROPERTY, 1, 0, 0},
}

// oapGroup is the group checkResourceExistence sends: shard_num, replicas
// (0, so absent on the wire), day intervals except for property groups, and
// default_stages ["hot"] (GroupResource's default query stages).
func oapGroup(name string) *commonv1.Group {
	c := oapGroups[name]
	ro := &commonv1.ResourceOpts{ShardNum: c.shards, DefaultStages: []string{"hot"}}
	if c.catalog != commonv1.Catalog_CATALOG_PROPERTY {
		ro.SegmentInterval = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: c.segmentDays}
		ro.Ttl = &commonv1.IntervalRule{Unit: commonv1.IntervalRule_UNIT_DAY, Num: c.ttlDays}
	}
	return &commonv1.Group{Metadata: &commonv1.Metadata{Name: name}, Catalog: c.catalog, ResourceOpts: ro}
}

// oapColumn is the part of an OAP ModelColumn the schema is built from.
type oapColumn struct {
	name     string
	tag      databasev1.TagType   // a tag's type (measures: when field is unset)
	field    databasev1.FieldType // set: a measure field (@BanyanDB.MeasureField)
	seriesID bool                 // @BanyanDB.SeriesID
	indexed  bool                 // shouldIndex: not storageOnly, no @BanyanDB.NoIndexing
	analyzer string               // @BanyanDB.MatchQuery
	sortable bool                 // @BanyanDB.EnableSort
}

// oapModel is one OAP model: a measure (interval set) or a stream.
type oapModel struct {
	group, name string
	interval    string // measure: downSamplingDuration(...).format()
	catalog     commonv1.Catalog
	cols        []oapColumn
	tsColumn    string   // stream: @BanyanDB.TimestampColumn, never indexed
	shardingKey []string // @BanyanDB.ShardingKey
	topN        string   // measure: the model name bydb-topn.yml refers to
}

func (m *oapModel) md() *commonv1.Metadata {
	return &commonv1.Metadata{Group: m.group, Name: m.name}
}

// layout is m as internal/oaplayout, which holds MetadataRegistry's rules.
func (m *oapModel) layout() *oaplayout.Model {
	l := &oaplayout.Model{
		Group: m.group, Name: m.name, Catalog: m.catalog, Interval: m.interval,
		TimestampColumn: m.tsColumn, ShardingKey: m.shardingKey,
	}
	for _, c := range m.cols {
		l.Columns = append(l.Columns, oaplayout.Column{
			Name: c.name, Tag: c.tag, Field: c.field, SeriesID: c.seriesID,
			Indexed: c.indexed, Analyzer: c.analyzer, Sortable: c.sortable,
		})
	}
	return l
}

// familyOf maps each tag to its family, as MetadataRegistry.Schema.tags.
func (m *oapModel) familyOf() map[string]string { return m.layout().Families() }

func (m *oapModel) indexRules() []*databasev1.IndexRule { return m.layout().IndexRules() }

// measure is registerMeasureModel's Measure.
func (m *oapModel) measure() *databasev1.Measure { return m.layout().Measure() }

func (m *oapModel) stream() *databasev1.Stream { return m.layout().Stream() }

// binding is the IndexRuleBinding BanyanDBIndexInstaller builds. begin_at
// and expire_at are left to the client (now, 2099-01-01) when it is
// created.
func (m *oapModel) binding(rules []*databasev1.IndexRule) *databasev1.IndexRuleBinding {
	return m.layout().Binding(rules)
}

// oapTopN is one rule of bydb-topn.yml.
type oapTopN struct {
	name, metric string
	groupBy      []string
	sort         modelv1.Sort // des: SORT_DESC, asc: SORT_ASC
}

// oapTopNRules are bydb-topn.yml's endpoint rules plus one that a later
// OAP version no longer configures: the second boot's cleanup deletes it.
var (
	oapTopNRules = []oapTopN{
		{"endpoint_cpm-layer", "endpoint_cpm", []string{"attr0"}, modelv1.Sort_SORT_DESC},
		{"endpoint_cpm-service", "endpoint_cpm", []string{"service_id"}, modelv1.Sort_SORT_DESC},
		{"endpoint_resp_time-layer", "endpoint_resp_time", []string{"attr0"}, modelv1.Sort_SORT_DESC},
		{"endpoint_resp_time-service", "endpoint_resp_time", []string{"service_id"}, modelv1.Sort_SORT_DESC},
	}
	oapRetiredTopN = oapTopN{"endpoint_cpm-attr1", "endpoint_cpm", []string{"attr1"}, modelv1.Sort_SORT_ASC}
)

// topNs is parseTopNSpecs for m: the value column ("value" for OAP's
// single-value metrics), counters_number 1000, lru_size 10 for minute
// measures and 2 for hour and day ones.
func (m *oapModel) topNs(rules []oapTopN) []*databasev1.TopNAggregation {
	lru := int32(2)
	if m.interval == "1m" {
		lru = 10
	}
	var out []*databasev1.TopNAggregation
	for _, r := range rules {
		if r.metric != m.topN {
			continue
		}
		out = append(out, &databasev1.TopNAggregation{
			Metadata:        &commonv1.Metadata{Group: m.group, Name: r.name},
			SourceMeasure:   m.md(),
			FieldName:       "value",
			FieldValueSort:  r.sort,
			GroupByTagNames: r.groupBy,
			CountersNumber:  1000,
			LruSize:         lru,
		})
	}
	return out
}

func strTag(name string) oapColumn {
	return oapColumn{name: name, tag: databasev1.TagType_TAG_TYPE_STRING, indexed: true}
}

// endpointColumns are an OAL endpoint metric's columns, subclass first as
// StorageModels reads them: entity_id (series id), service_id (sharding
// key) and the decorator's attr0..attr5, then the function's fields.
func endpointColumns(fields ...string) []oapColumn {
	cols := []oapColumn{{name: "entity_id", tag: databasev1.TagType_TAG_TYPE_STRING, seriesID: true, indexed: true}, strTag("service_id")}
	for i := range 6 {
		cols = append(cols, strTag("attr"+string(rune('0'+i))))
	}
	for _, f := range fields {
		cols = append(cols, oapColumn{name: f, field: databasev1.FieldType_FIELD_TYPE_INT})
	}
	return cols
}

// endpointMetric is the OAL metric `metric` at one downsampling.
func endpointMetric(group, metric, interval string, fields ...string) *oapModel {
	suffix := map[string]string{"1m": "_minute", "1h": "_hour", "1d": "_day"}[interval]
	return &oapModel{
		group: group, name: metric + suffix, interval: interval, catalog: commonv1.Catalog_CATALOG_MEASURE,
		cols: endpointColumns(fields...), shardingKey: []string{"service_id"}, topN: metric,
	}
}

// oapMeasures: endpoint_cpm (CPMMetrics: value, total) at minute, hour and
// day, and endpoint_resp_time (LongAvgMetrics: summation, count, value) at
// minute.
func oapMeasures() []*oapModel {
	return []*oapModel{
		endpointMetric(oapMinute, "endpoint_cpm", "1m", "value", "total"),
		endpointMetric(oapMinute, "endpoint_resp_time", "1m", "summation", "count", "value"),
		endpointMetric(oapHour, "endpoint_cpm", "1h", "value", "total"),
		endpointMetric(oapDay, "endpoint_cpm", "1d", "value", "total"),
	}
}

// oapAlarmStream is AlarmRecord ("alarm_record" in sw_records), its
// columns in declaration order; time_bucket is never a tag.
func oapAlarmStream() *oapModel {
	t := databasev1.TagType_TAG_TYPE_STRING
	return &oapModel{
		group: oapRecords, name: "alarm_record", catalog: commonv1.Catalog_CATALOG_STREAM, tsColumn: "start_time",
		cols: []oapColumn{
			{name: "scope", tag: databasev1.TagType_TAG_TYPE_INT, indexed: true},
			{name: "name", tag: t},
			{name: "id0", tag: t, seriesID: true},
			{name: "id1", tag: t},
			{name: "start_time", tag: databasev1.TagType_TAG_TYPE_INT, indexed: true},
			{name: "alarm_message", tag: t, indexed: true, analyzer: "simple"},
			{name: "rule_name", tag: t, indexed: true},
			{name: "tags", tag: databasev1.TagType_TAG_TYPE_STRING_ARRAY, indexed: true},
			{name: "tags_raw_data", tag: databasev1.TagType_TAG_TYPE_DATA_BINARY},
			{name: "snapshot", tag: t},
			{name: "uuid", tag: t, indexed: true},
		},
	}
}

// oapSegmentTrace is registerTraceModel for SegmentRecord ("segment" in
// sw_trace): only indexed columns become tags, the timestamp column is a
// TIMESTAMP tag, and each @BanyanDB.Trace.IndexRule is a tree rule over its
// columns with the order-by column last.
func oapSegmentTrace() (*databasev1.Trace, []*databasev1.IndexRule, *databasev1.IndexRuleBinding) {
	s, i := databasev1.TagType_TAG_TYPE_STRING, databasev1.TagType_TAG_TYPE_INT
	tr := &databasev1.Trace{
		Metadata: &commonv1.Metadata{Group: oapTrace, Name: "segment"},
		Tags: []*databasev1.TraceTagSpec{
			{Name: "segment_id", Type: s}, {Name: "trace_id", Type: s}, {Name: "service_id", Type: s},
			{Name: "service_instance_id", Type: s}, {Name: "endpoint_id", Type: s},
			{Name: "start_time", Type: databasev1.TagType_TAG_TYPE_TIMESTAMP},
			{Name: "latency", Type: i}, {Name: "is_error", Type: i},
			{Name: "tags", Type: databasev1.TagType_TAG_TYPE_STRING_ARRAY},
		},
		TraceIdTagName:   "trace_id",
		TimestampTagName: "start_time",
		SpanIdTagName:    "segment_id",
	}
	var rules []*databasev1.IndexRule
	for _, orderBy := range []string{"start_time", "latency"} {
		rules = append(rules, &databasev1.IndexRule{
			Metadata: &commonv1.Metadata{Group: oapTrace, Name: orderBy},
			Tags:     []string{"service_id", "is_error", orderBy},
			Type:     databasev1.IndexRule_TYPE_TREE,
		})
	}
	m := &oapModel{group: oapTrace, name: "segment", catalog: commonv1.Catalog_CATALOG_TRACE}
	return tr, rules, m.binding(rules)
}

// oapUITemplate is registerPropertyModel for UITemplate ("ui_template" in
// sw_property): every column is a tag.
func oapUITemplate() *databasev1.Property {
	return &databasev1.Property{
		Metadata: &commonv1.Metadata{Group: oapProperty, Name: "ui_template"},
		Tags: []*databasev1.TagSpec{
			{Name: "template_id", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "configuration", Type: databasev1.TagType_TAG_TYPE_STRING},
			{Name: "update_time", Type: databasev1.TagType_TAG_TYPE_INT},
			{Name: "disabled", Type: databasev1.TagType_TAG_TYPE_INT},
		},
	}
}

// sortedKeys is how OAP's TreeMaps order tag families, tags and fields
// in a write.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

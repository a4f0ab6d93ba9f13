package bench

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

// The oap shape (--shape oap) writes what SkyWalking OAP 10.4's BanyanDB
// storage plugin writes for two of its busiest models, laid out as its
// MetadataRegistry lays them out:
//
//   - a measure: an OAL service metric at minute downsampling,
//     service_resp_time_minute in sw_metricsMinute (LongAvgMetrics, with
//     ServiceDecorator's attributes);
//   - a stream: LogRecord, "log" in sw_recordsLog. (OAP 10.4 keeps
//     segments in a trace, sw_trace/segment, which --kind trace imitates.)
//
// The rules MetadataRegistry applies: every column but time_bucket is a
// tag, except a measure's @BanyanDB.MeasureField columns, which are fields
// (int: GORILLA encoded; all ZSTD compressed); a tag that OAP indexes
// (not storageOnly, no @BanyanDB.NoIndexing, not the timestamp column, not
// a series id without analyzer) gets an index rule named after it, of the
// column's @BanyanDB.IndexRule type (inverted unless said), no_sort unless
// @BanyanDB.EnableSort, and goes to family "searchable"; every other tag
// to "storage-only". The schema lists "storage-only" first (a Java HashMap
// iterates it first) and the tags in the model's column order (a class's
// own fields before its superclass's); OAP writes families, tags and
// fields in alphabetical order with the spec (--flush-size).

// Family names of OAP's measures and streams.
const (
	famSearchable  = "searchable"
	famStorageOnly = "storage-only"
)

// oapVaries says how often a column's value changes, so the encoder can
// keep what does not.
type oapVaries uint8

const (
	oapConst     oapVaries = iota // the same for every message of a run
	oapPerEntity                  // the same for every message of an entity
	oapPerMessage
)

// oapColumn is one column of an OAP model, as the storage plugin maps it.
type oapColumn struct {
	name     string
	tag      databasev1.TagType   // a tag's type, unset for a field
	field    databasev1.FieldType // a measure field's type, unset for a tag
	seriesID bool                 // @BanyanDB.SeriesID: part of the entity, in index order
	// rule is the type of the index rule OAP makes for the tag; unset:
	// none, the tag goes to storage-only.
	rule   databasev1.IndexRule_Type
	varies oapVaries
	// value appends message seq's value, an encoded model.v1.TagValue (a
	// tag) or FieldValue (a field).
	value func(m *messages, seq int64, b []byte) []byte
}

func (c *oapColumn) family() string {
	if c.rule != databasev1.IndexRule_TYPE_UNSPECIFIED {
		return famSearchable
	}
	return famStorageOnly
}

// oapLayout is one OAP model: its place, columns and bydb.yml group.
type oapLayout struct {
	group, name string
	interval    string // measures: downSamplingDuration(...).format()
	ttlDays     uint32 // bydb.yml's hot stage ttl; one-day segments
	// stepMillis is the time between an entity's messages: a minute
	// metric's time bucket, a millisecond for records.
	stepMillis int64
	cols       []oapColumn
}

// oapLayoutOf is the layout --shape oap writes for kind, nil for traces.
func oapLayoutOf(kind string) *oapLayout {
	switch kind {
	case KindMeasure:
		return &oapServiceRespTime
	case KindStream:
		return &oapLog
	}
	return nil
}

func (l *oapLayout) tagFamilies() []*databasev1.TagFamilySpec {
	var out []*databasev1.TagFamilySpec
	for _, fam := range []string{famStorageOnly, famSearchable} {
		spec := &databasev1.TagFamilySpec{Name: fam}
		for _, c := range l.cols {
			if c.tag != databasev1.TagType_TAG_TYPE_UNSPECIFIED && c.family() == fam {
				spec.Tags = append(spec.Tags, &databasev1.TagSpec{Name: c.name, Type: c.tag})
			}
		}
		if len(spec.Tags) > 0 {
			out = append(out, spec)
		}
	}
	return out
}

func (l *oapLayout) entity() *databasev1.Entity {
	e := &databasev1.Entity{}
	for _, c := range l.entityColumns() {
		e.TagNames = append(e.TagNames, c.name)
	}
	return e
}

func (l *oapLayout) entityColumns() []*oapColumn {
	var cols []*oapColumn
	for i := range l.cols {
		if l.cols[i].seriesID {
			cols = append(cols, &l.cols[i])
		}
	}
	return cols
}

func (l *oapLayout) fieldColumns() []*oapColumn {
	var cols []*oapColumn
	for i := range l.cols {
		if l.cols[i].field != databasev1.FieldType_FIELD_TYPE_UNSPECIFIED {
			cols = append(cols, &l.cols[i])
		}
	}
	return cols
}

func (l *oapLayout) measure(md *commonv1.Metadata) *databasev1.Measure {
	ms := &databasev1.Measure{Metadata: proto.CloneOf(md), Interval: l.interval, Entity: l.entity(), TagFamilies: l.tagFamilies()}
	for _, c := range l.fieldColumns() {
		f := &databasev1.FieldSpec{Name: c.name, FieldType: c.field, CompressionMethod: databasev1.CompressionMethod_COMPRESSION_METHOD_ZSTD}
		if c.field == databasev1.FieldType_FIELD_TYPE_INT {
			f.EncodingMethod = databasev1.EncodingMethod_ENCODING_METHOD_GORILLA
		}
		ms.Fields = append(ms.Fields, f)
	}
	return ms
}

func (l *oapLayout) stream(md *commonv1.Metadata) *databasev1.Stream {
	return &databasev1.Stream{Metadata: proto.CloneOf(md), Entity: l.entity(), TagFamilies: l.tagFamilies()}
}

// indexRules are the rules OAP creates in md's group, one a tag.
func (l *oapLayout) indexRules(md *commonv1.Metadata) []*databasev1.IndexRule {
	var rules []*databasev1.IndexRule
	for _, c := range l.cols {
		if c.rule == databasev1.IndexRule_TYPE_UNSPECIFIED {
			continue
		}
		rules = append(rules, &databasev1.IndexRule{
			Metadata: &commonv1.Metadata{Group: md.GetGroup(), Name: c.name},
			Tags:     []string{c.name},
			Type:     c.rule,
			NoSort:   true, // none of these columns has @BanyanDB.EnableSort
		})
	}
	return rules
}

// binding is BanyanDBIndexInstaller's binding of the rules to md: named
// after its subject, from now to 2099-01-01 as OAP's client fills it.
func (l *oapLayout) binding(md *commonv1.Metadata, catalog commonv1.Catalog, now time.Time) *databasev1.IndexRuleBinding {
	b := &databasev1.IndexRuleBinding{
		Metadata: proto.CloneOf(md),
		Subject:  &databasev1.Subject{Catalog: catalog, Name: md.GetName()},
		BeginAt:  timestamppb.New(now),
		ExpireAt: timestamppb.New(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	for _, r := range l.indexRules(md) {
		b.Rules = append(b.Rules, r.GetMetadata().GetName())
	}
	return b
}

// Encoded model.v1.TagValue and FieldValue, as proto.Marshal writes them.

func appendStrTag(b []byte, s string) []byte {
	b = protowire.AppendTag(b, 2, protowire.BytesType) // str
	b = protowire.AppendVarint(b, uint64(sizeField(len(s))))
	return appendField(b, 1, []byte(s))
}

// appendInt appends a model.v1.Int as field num of its holder: 4 of a
// TagValue, 3 of a FieldValue.
func appendInt(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	if v == 0 { // proto.Marshal leaves the zero out
		return protowire.AppendVarint(b, 0)
	}
	b = protowire.AppendVarint(b, uint64(1+protowire.SizeVarint(uint64(v))))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendIntTag(b []byte, v int64) []byte   { return appendInt(b, 4, v) }
func appendIntField(b []byte, v int64) []byte { return appendInt(b, 3, v) }

// nullTag is a TagValue{null: NULL_VALUE}: how OAP's client writes a null
// string, such as an attribute no decorator set.
func nullTag(_ *messages, _ int64, b []byte) []byte {
	return append(b, byte(protowire.EncodeTag(1, protowire.VarintType)), 0)
}

func constStr(s string) func(*messages, int64, []byte) []byte {
	return func(_ *messages, _ int64, b []byte) []byte { return appendStrTag(b, s) }
}

// oapID is OAP's IDManager encoding of a name: base64 (standard, padded).
func oapID(name string) string { return base64.StdEncoding.EncodeToString([]byte(name)) }

// oapServiceID is IDManager.ServiceID.buildId of entity e's service, a
// normal (real) one: its name's base64 and ".1". Names carry the run id,
// so runs into the same measure or stream never share a series.
func (m *messages) oapServiceID(svc int64) string {
	return oapID(m.runID+"::service-"+strconv.FormatInt(svc, 10)) + ".1"
}

// The measure: service_resp_time = from(Service.latency).longAvg()
// .decorator("ServiceDecorator"). The generated class has entity_id (the
// series id) and the source's attr0..attr5 (attr0 is the service's layer,
// the others left null); LongAvgMetrics adds the fields summation, count
// and value. A point is one service's minute: entity e is service e.
var oapServiceRespTime = oapLayout{
	group: "sw_metricsMinute", name: "service_resp_time_minute", interval: "1m", ttlDays: 7,
	stepMillis: time.Minute.Milliseconds(),
	cols: append(append([]oapColumn{{
		name: "entity_id", tag: databasev1.TagType_TAG_TYPE_STRING, seriesID: true, varies: oapPerEntity,
		value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapServiceID(m.entity(seq))) },
	}}, oapAttrs()...),
		oapColumn{name: "summation", field: databasev1.FieldType_FIELD_TYPE_INT, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				s, _, _ := oapRespTime(seq)
				return appendIntField(b, s)
			}},
		oapColumn{name: "count", field: databasev1.FieldType_FIELD_TYPE_INT, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				_, c, _ := oapRespTime(seq)
				return appendIntField(b, c)
			}},
		oapColumn{name: "value", field: databasev1.FieldType_FIELD_TYPE_INT, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				_, _, v := oapRespTime(seq)
				return appendIntField(b, v)
			}},
	),
}

// oapAttrs are the decorator's attr0..attr5: indexed strings.
func oapAttrs() []oapColumn {
	cols := make([]oapColumn, 6)
	for i := range cols {
		cols[i] = oapColumn{name: fmt.Sprintf("attr%d", i), tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_INVERTED, value: nullTag}
	}
	cols[0].value = constStr("GENERAL")
	return cols
}

// oapRespTime is message seq's minute of a service: calls and their
// summed and average latency in ms, as LongAvgMetrics.calculate leaves
// them.
func oapRespTime(seq int64) (summation, count, value int64) {
	count = 1 + (seq/7)%600
	value = 5 + (seq*31)%1500
	return value * count, count, value
}

// The stream: LogRecord, its own unique_id first, then AbstractLogRecord's
// columns. Entity e is instance e mod 10 of service e div 10; each message
// is one log line of a trace's segment, --payload-bytes of text.
var oapLog = oapLayout{
	group: "sw_recordsLog", name: "log", ttlDays: 3, stepMillis: 1,
	cols: []oapColumn{
		{name: "unique_id", tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_INVERTED, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.elementID(seq)) }},
		{name: "service_id", tag: databasev1.TagType_TAG_TYPE_STRING, seriesID: true, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte {
				return appendStrTag(b, m.oapServiceID(m.entity(seq)/instancesPerService))
			}},
		{name: "service_instance_id", tag: databasev1.TagType_TAG_TYPE_STRING, seriesID: true, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapInstanceID(m.entity(seq))) }},
		{name: "endpoint_id", tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_INVERTED, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapEndpointID(m.entity(seq))) }},
		{name: "trace_id", tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_SKIPPING, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				return appendStrTag(b, m.oapTraceID(seq, oapLogsPerTrace))
			}},
		{name: "trace_segment_id", tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_INVERTED, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				return appendStrTag(b, m.oapTraceID(seq, oapLogsPerSegment))
			}},
		{name: "span_id", tag: databasev1.TagType_TAG_TYPE_INT, varies: oapPerMessage, // @BanyanDB.NoIndexing
			value: func(m *messages, seq int64, b []byte) []byte { return appendIntTag(b, seq%oapLogsPerSegment) }},
		{name: "content_type", tag: databasev1.TagType_TAG_TYPE_INT, // storageOnly
			value: func(_ *messages, _ int64, b []byte) []byte { return appendIntTag(b, 1) }}, // TEXT
		{name: "content", tag: databasev1.TagType_TAG_TYPE_STRING, rule: databasev1.IndexRule_TYPE_INVERTED, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapLogLine(seq)) }},
		{name: "timestamp", tag: databasev1.TagType_TAG_TYPE_INT, varies: oapPerMessage, // the timestamp column: not indexed
			value: func(m *messages, seq int64, b []byte) []byte { return appendIntTag(b, m.millis(seq)) }},
		{name: "tags_raw_data", tag: databasev1.TagType_TAG_TYPE_DATA_BINARY, // storageOnly
			value: func(_ *messages, _ int64, b []byte) []byte { return appendField(b, 6, oapLogTags) }},
		{name: "tags", tag: databasev1.TagType_TAG_TYPE_STRING_ARRAY, rule: databasev1.IndexRule_TYPE_INVERTED,
			value: func(_ *messages, _ int64, b []byte) []byte {
				// The searchable log tags (searchableLogsTags: level).
				return appendField(b, 3, appendField(nil, 1, []byte("level=INFO")))
			}},
	},
}

// A segment logs oapLogsPerSegment lines; a trace has two segments.
const (
	oapLogsPerSegment = 4
	oapLogsPerTrace   = 2 * oapLogsPerSegment
)

// oapLogTags is tags_raw_data: the log's tags (LogTags: KeyStringValuePair
// level, logger and thread), serialized.
var oapLogTags = func() []byte {
	var b []byte
	for _, kv := range [][2]string{{"level", "INFO"}, {"logger", "com.example.shop.OrderController"}, {"thread", "http-nio-8080-exec-12"}} {
		b = appendField(b, 1, appendField(appendField(nil, 1, []byte(kv[0])), 2, []byte(kv[1])))
	}
	return b
}()

// oapInstanceID is IDManager.ServiceInstanceID.buildId of entity e: its
// service's id, "_" and the base64 of an agent's instance name
// (uuid@ip).
func (m *messages) oapInstanceID(e int64) string {
	name := fmt.Sprintf("%s%024x@10.0.%d.%d", m.runID[1:], e, e/250%250, e%250+1)
	return m.oapServiceID(e/instancesPerService) + "_" + oapID(name)
}

// oapEndpointID is IDManager.EndpointID.buildId: the service's id, "_"
// and the base64 of the endpoint's name.
func (m *messages) oapEndpointID(e int64) string {
	return m.oapServiceID(e/instancesPerService) + "_" + oapID("{POST}/api/v1/orders/"+strconv.FormatInt(e%endpointsPerInstance, 10))
}

// oapTraceID is a SkyWalking agent's id (32 hex, thread, time and
// sequence) shared by per consecutive messages of one entity: a trace id
// or a segment id.
func (m *messages) oapTraceID(seq, per int64) string {
	e, r := m.entity(seq), seq/m.entities
	first := (r/per*per)*m.entities + e
	return fmt.Sprintf("%s%015x%08x.%d.%d", m.runID[1:], e, r/per, 40+e%200, m.millis(first)*10000+first%10000)
}

// oapText is the text of the run's log lines: the payload's bytes mapped
// to letters and spaces.
func oapText(payload []byte) string {
	b := make([]byte, len(payload))
	for i, c := range payload {
		b[i] = "abcdefghijklmnopqrstuvwxyz     "[c%31]
	}
	return string(b)
}

// oapLogLine is message seq's log line, --payload-bytes long: a line of
// its own, as a log's are (the content is indexed whole), its time and
// seq first, then the run's text.
func (m *messages) oapLogLine(seq int64) string {
	b := make([]byte, 0, max(len(m.oap.text), 40))
	b = strconv.AppendInt(b, m.millis(seq), 10)
	b = append(b, " INFO [exec-"...)
	b = strconv.AppendInt(b, seq%200, 10)
	b = append(b, "] order "...)
	b = strconv.AppendInt(b, seq, 10)
	if len(b) >= len(m.oap.text) {
		return string(b[:len(m.oap.text)])
	}
	return string(append(b, m.oap.text[len(b):]...))
}

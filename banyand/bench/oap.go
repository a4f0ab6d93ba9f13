package bench

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	"github.com/banyand-io/banyand/internal/oaplayout"
)

// The oap shape (--shape oap) writes what SkyWalking OAP 10.4's BanyanDB
// storage plugin writes for two of its busiest models, laid out by
// internal/oaplayout as its MetadataRegistry lays them out:
//
//   - a measure: an OAL service metric at minute downsampling,
//     service_resp_time_minute in sw_metricsMinute (LongAvgMetrics, with
//     ServiceDecorator's attributes);
//   - a stream: LogRecord, "log" in sw_recordsLog. (OAP 10.4 keeps
//     segments in a trace, sw_trace/segment, which --kind trace imitates.)
//
// OAP writes families, tags and fields in alphabetical order with the
// spec (--flush-size).

// Family names of OAP's measures and streams.
const (
	famSearchable  = oaplayout.Searchable
	famStorageOnly = oaplayout.StorageOnly
)

// oapVaries says how often a column's value changes, so the encoder can
// keep what does not.
type oapVaries uint8

const (
	oapConst     oapVaries = iota // the same for every message of a run
	oapPerEntity                  // the same for every message of an entity
	oapPerMessage
)

// oapColumn is one column of an OAP model and the values the tool
// writes in it.
type oapColumn struct {
	oaplayout.Column
	varies oapVaries
	// value appends message seq's value, an encoded model.v1.TagValue (a
	// tag) or FieldValue (a field).
	value func(m *messages, seq int64, b []byte) []byte
}

func (c *oapColumn) isField() bool { return c.Field != databasev1.FieldType_FIELD_TYPE_UNSPECIFIED }

// oapLayout is one OAP model, its bydb.yml group and its values.
type oapLayout struct {
	// model is the model in OAP's group and name; cols are its columns.
	model   oaplayout.Model
	ttlDays uint32 // bydb.yml's hot stage ttl; one-day segments
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

// in is the model in md's group and name.
func (l *oapLayout) in(md *commonv1.Metadata) *oaplayout.Model {
	m := l.model
	m.Group, m.Name = md.GetGroup(), md.GetName()
	m.Columns = make([]oaplayout.Column, len(l.cols))
	for i, c := range l.cols {
		m.Columns[i] = c.Column
	}
	return &m
}

func (l *oapLayout) tagFamilies() []*databasev1.TagFamilySpec {
	return l.in(l.model.Metadata()).TagFamilies()
}

func (l *oapLayout) entityColumns() []*oapColumn {
	var cols []*oapColumn
	for i := range l.cols {
		if l.cols[i].SeriesID {
			cols = append(cols, &l.cols[i])
		}
	}
	return cols
}

func (l *oapLayout) fieldColumns() []*oapColumn {
	var cols []*oapColumn
	for i := range l.cols {
		if l.cols[i].isField() {
			cols = append(cols, &l.cols[i])
		}
	}
	return cols
}

func (l *oapLayout) measure(md *commonv1.Metadata) *databasev1.Measure { return l.in(md).Measure() }

func (l *oapLayout) stream(md *commonv1.Metadata) *databasev1.Stream { return l.in(md).Stream() }

// indexRules are the rules OAP creates in md's group, one a tag.
func (l *oapLayout) indexRules(md *commonv1.Metadata) []*databasev1.IndexRule {
	return l.in(md).IndexRules()
}

// binding is BanyanDBIndexInstaller's binding of the rules to md, from now
// to 2099-01-01 as OAP's client fills it.
func (l *oapLayout) binding(md *commonv1.Metadata, now time.Time) *databasev1.IndexRuleBinding {
	b := l.in(md).Binding(l.indexRules(md))
	b.BeginAt = timestamppb.New(now)
	b.ExpireAt = timestamppb.New(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
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

// Column kinds of the layouts below.
var (
	oapString = oaplayout.Column{Tag: databasev1.TagType_TAG_TYPE_STRING, Indexed: true}
	oapInt    = oaplayout.Column{Tag: databasev1.TagType_TAG_TYPE_INT, Indexed: true}
	oapField  = oaplayout.Column{Field: databasev1.FieldType_FIELD_TYPE_INT}
)

// col is a column of kind named name.
func col(kind oaplayout.Column, name string, varies oapVaries, value func(*messages, int64, []byte) []byte) oapColumn {
	kind.Name = name
	return oapColumn{Column: kind, varies: varies, value: value}
}

// The measure: service_resp_time = from(Service.latency).longAvg()
// .decorator("ServiceDecorator"). The generated class has entity_id (the
// series id) and the source's attr0..attr5 (attr0 is the service's layer,
// the others left null); LongAvgMetrics adds the fields summation, count
// and value. A point is one service's minute: entity e is service e.
var oapServiceRespTime = oapLayout{
	model: oaplayout.Model{
		Group: "sw_metricsMinute", Name: "service_resp_time_minute", Catalog: commonv1.Catalog_CATALOG_MEASURE, Interval: "1m",
	},
	ttlDays: 7, stepMillis: time.Minute.Milliseconds(),
	cols: []oapColumn{
		{Column: oaplayout.Column{Name: "entity_id", Tag: databasev1.TagType_TAG_TYPE_STRING, SeriesID: true, Indexed: true}, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapServiceID(m.entity(seq))) }},
		col(oapString, "attr0", oapConst, constStr("GENERAL")),
		col(oapString, "attr1", oapConst, nullTag),
		col(oapString, "attr2", oapConst, nullTag),
		col(oapString, "attr3", oapConst, nullTag),
		col(oapString, "attr4", oapConst, nullTag),
		col(oapString, "attr5", oapConst, nullTag),
		col(oapField, "summation", oapPerMessage, func(m *messages, seq int64, b []byte) []byte {
			s, _, _ := oapRespTime(seq)
			return appendIntField(b, s)
		}),
		col(oapField, "count", oapPerMessage, func(m *messages, seq int64, b []byte) []byte {
			_, c, _ := oapRespTime(seq)
			return appendIntField(b, c)
		}),
		col(oapField, "value", oapPerMessage, func(m *messages, seq int64, b []byte) []byte {
			_, _, v := oapRespTime(seq)
			return appendIntField(b, v)
		}),
	},
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
	model:   oaplayout.Model{Group: "sw_recordsLog", Name: "log", Catalog: commonv1.Catalog_CATALOG_STREAM, TimestampColumn: "timestamp"},
	ttlDays: 3, stepMillis: 1,
	cols: []oapColumn{
		col(oapString, "unique_id", oapPerMessage, func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.elementID(seq)) }),
		{Column: oaplayout.Column{Name: "service_id", Tag: databasev1.TagType_TAG_TYPE_STRING, SeriesID: true, Indexed: true}, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte {
				return appendStrTag(b, m.oapServiceID(m.entity(seq)/instancesPerService))
			}},
		{Column: oaplayout.Column{Name: "service_instance_id", Tag: databasev1.TagType_TAG_TYPE_STRING, SeriesID: true, Indexed: true}, varies: oapPerEntity,
			value: func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapInstanceID(m.entity(seq))) }},
		col(oapString, "endpoint_id", oapPerEntity, func(m *messages, seq int64, b []byte) []byte {
			return appendStrTag(b, m.oapEndpointID(m.entity(seq)))
		}),
		{Column: oaplayout.Column{Name: "trace_id", Tag: databasev1.TagType_TAG_TYPE_STRING, Indexed: true, IndexType: databasev1.IndexRule_TYPE_SKIPPING}, varies: oapPerMessage,
			value: func(m *messages, seq int64, b []byte) []byte {
				return appendStrTag(b, m.oapTraceID(seq, oapLogsPerTrace))
			}},
		col(oapString, "trace_segment_id", oapPerMessage, func(m *messages, seq int64, b []byte) []byte {
			return appendStrTag(b, m.oapTraceID(seq, oapLogsPerSegment))
		}),
		{Column: oaplayout.Column{Name: "span_id", Tag: databasev1.TagType_TAG_TYPE_INT}, varies: oapPerMessage, // @BanyanDB.NoIndexing
			value: func(m *messages, seq int64, b []byte) []byte { return appendIntTag(b, seq%oapLogsPerSegment) }},
		{Column: oaplayout.Column{Name: "content_type", Tag: databasev1.TagType_TAG_TYPE_INT}, // storageOnly
			value: func(_ *messages, _ int64, b []byte) []byte { return appendIntTag(b, 1) }}, // TEXT
		col(oapString, "content", oapPerMessage, func(m *messages, seq int64, b []byte) []byte { return appendStrTag(b, m.oapLogLine(seq)) }),
		col(oapInt, "timestamp", oapPerMessage, func(m *messages, seq int64, b []byte) []byte { return appendIntTag(b, m.millis(seq)) }),
		{Column: oaplayout.Column{Name: "tags_raw_data", Tag: databasev1.TagType_TAG_TYPE_DATA_BINARY}, // storageOnly
			value: func(_ *messages, _ int64, b []byte) []byte { return appendField(b, 6, oapLogTags) }},
		{Column: oaplayout.Column{Name: "tags", Tag: databasev1.TagType_TAG_TYPE_STRING_ARRAY, Indexed: true},
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

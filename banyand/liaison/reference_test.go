package liaison

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/banyand-io/banyand/banyand/schema"

	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

// The reference: the write rules restated over decoded messages
// (proto.Unmarshal's result), as a client reading BanyanDB's API would
// state them. The differential tests hold the write path, which applies
// the rules to wire-level values, to this.

func refTimestamp(ts *timestamppb.Timestamp) *writeError {
	if ts == nil {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: "timestamp is required"}
	}
	// BanyanDB's check: the time as protobuf reads it (nanos outside a
	// second carry into the seconds) within int64 nanoseconds, to the
	// millisecond. Seconds this far out overflow time.Time's own seconds.
	if ts.GetSeconds() > 1<<40 || ts.GetSeconds() < -(1<<40) {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: "timestamp is out of range"}
	}
	t := ts.AsTime()
	if t.Before(minTime) || t.After(maxTime) {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: fmt.Sprintf("timestamp %s is outside %s..%s", t, minTime, maxTime)}
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: "timestamp must have millisecond precision"}
	}
	return nil
}

// tagMatches reports whether v may be stored in a tag of type t. Null fits
// any tag.
func refTagMatches(t databasev1.TagType, v *modelv1.TagValue) bool {
	switch v.GetValue().(type) {
	case nil, *modelv1.TagValue_Null:
		return true
	case *modelv1.TagValue_Str:
		return t == databasev1.TagType_TAG_TYPE_STRING
	case *modelv1.TagValue_Int:
		return t == databasev1.TagType_TAG_TYPE_INT
	case *modelv1.TagValue_StrArray:
		return t == databasev1.TagType_TAG_TYPE_STRING_ARRAY
	case *modelv1.TagValue_IntArray:
		return t == databasev1.TagType_TAG_TYPE_INT_ARRAY
	case *modelv1.TagValue_BinaryData:
		return t == databasev1.TagType_TAG_TYPE_DATA_BINARY
	case *modelv1.TagValue_Timestamp:
		return t == databasev1.TagType_TAG_TYPE_TIMESTAMP
	}
	return false
}

func refFieldMatches(t databasev1.FieldType, v *modelv1.FieldValue) bool {
	switch v.GetValue().(type) {
	case nil, *modelv1.FieldValue_Null:
		return true
	case *modelv1.FieldValue_Str:
		return t == databasev1.FieldType_FIELD_TYPE_STRING
	case *modelv1.FieldValue_Int:
		return t == databasev1.FieldType_FIELD_TYPE_INT
	case *modelv1.FieldValue_Float:
		return t == databasev1.FieldType_FIELD_TYPE_FLOAT
	case *modelv1.FieldValue_BinaryData:
		return t == databasev1.FieldType_FIELD_TYPE_DATA_BINARY
	}
	return false
}

// entityValue converts a tag value to its series-key form; entity tags
// may not be null. The conversion is the storage engine's, so the keys the
// liaison routes by and the keys data nodes seek by always agree.
func refEntityValue(ref tagRef, v *modelv1.TagValue) (route.EntityValue, *writeError) {
	if _, null := v.GetValue().(*modelv1.TagValue_Null); !null {
		if ev, err := schema.EntityValue(v); err == nil {
			return ev, nil
		}
	}
	return route.EntityValue{}, invalid("entity tag %q is missing or null", ref.name)
}

// checkTags validates positional tag families against the layout.
func refCheckTags(l *layout, families []*modelv1.TagFamilyForWrite) *writeError {
	if len(families) > len(l.families) {
		return invalid("%d tag families written, schema of %s/%s has %d", len(families), l.group, l.name, len(l.families))
	}
	for fi, f := range families {
		spec := l.families[fi]
		if len(f.GetTags()) > len(spec.tags) {
			return invalid("tag family %q: %d tags written, schema has %d", spec.name, len(f.GetTags()), len(spec.tags))
		}
		for ti, v := range f.GetTags() {
			if !refTagMatches(spec.tags[ti], v) {
				return invalid("tag family %q tag %d: value %T does not fit %s", spec.name, ti, v.GetValue(), spec.tags[ti])
			}
		}
	}
	return nil
}

// seriesKey appends the series key of a write whose tags passed checkTags.
func refSeriesKey(l *layout, dst []byte, families []*modelv1.TagFamilyForWrite) ([]byte, *writeError) {
	dst = route.AppendSeriesName(dst, l.name)
	for _, ref := range l.entity {
		var v *modelv1.TagValue
		if ref.family < len(families) && ref.tag < len(families[ref.family].GetTags()) {
			v = families[ref.family].GetTags()[ref.tag]
		}
		ev, werr := refEntityValue(ref, v)
		if werr != nil {
			return dst, werr
		}
		var err error
		if dst, err = route.AppendEntityValue(dst, ev); err != nil {
			return dst, invalid("entity tag %q: %v", ref.name, err)
		}
	}
	return dst, nil
}

// specSource is a write's tag family spec: which tags it lists, in order.
type specSource interface {
	GetName() string
	GetTagNames() []string
}

// reorderTags turns spec-ordered tag families into schema order, filling
// tags the spec leaves out with nulls.
func refReorderTags(l *layout, families []*modelv1.TagFamilyForWrite, specs []specSource) ([]*modelv1.TagFamilyForWrite, *writeError) {
	if len(families) != len(specs) {
		return nil, invalid("%d tag families written but the spec names %d", len(families), len(specs))
	}
	out := make([]*modelv1.TagFamilyForWrite, len(l.families))
	for i, fl := range l.families {
		out[i] = &modelv1.TagFamilyForWrite{Tags: make([]*modelv1.TagValue, len(fl.tags))}
		for j := range out[i].Tags {
			out[i].Tags[j] = refNullTag
		}
	}
	for si, spec := range specs {
		fi, ok := l.familyIndex[spec.GetName()]
		if !ok {
			return nil, invalid("tag family %q is not in the schema of %s/%s", spec.GetName(), l.group, l.name)
		}
		values := families[si].GetTags()
		if len(values) != len(spec.GetTagNames()) {
			return nil, invalid("tag family %q: %d values for %d spec tags", spec.GetName(), len(values), len(spec.GetTagNames()))
		}
		for vi, name := range spec.GetTagNames() {
			ti, ok := l.families[fi].index[name]
			if !ok {
				return nil, invalid("tag %q is not in tag family %q", name, spec.GetName())
			}
			out[fi].Tags[ti] = values[vi]
		}
	}
	return out, nil
}

var refNullTag = &modelv1.TagValue{Value: &modelv1.TagValue_Null{}}

// prepareStream validates one stream write and normalises its tags to
// schema order. keyBuf is reused for the series key.
func refPrepareStream(l *streamLayout, req *streamv1.WriteRequest, keyBuf []byte) (*streamv1.ElementValue, prepared, *writeError) {
	el := req.GetElement()
	if el == nil {
		return nil, prepared{}, invalid("element is required")
	}
	if werr := refTimestamp(el.GetTimestamp()); werr != nil {
		return nil, prepared{}, werr
	}
	if specs := req.GetTagFamilySpec(); len(specs) > 0 {
		ss := make([]specSource, len(specs))
		for i, s := range specs {
			ss[i] = s
		}
		tf, werr := refReorderTags(l.layout, el.GetTagFamilies(), ss)
		if werr != nil {
			return nil, prepared{}, werr
		}
		el = &streamv1.ElementValue{ElementId: el.GetElementId(), Timestamp: el.GetTimestamp(), TagFamilies: tf}
	}
	p, werr := refFinishTags(l.layout, el.GetTagFamilies(), keyBuf)
	return el, p, werr
}

func refFinishTags(l *layout, families []*modelv1.TagFamilyForWrite, keyBuf []byte) (prepared, *writeError) {
	if werr := refCheckTags(l, families); werr != nil {
		return prepared{}, werr
	}
	key, werr := refSeriesKey(l, keyBuf[:0], families)
	if werr != nil {
		return prepared{}, werr
	}
	shard, err := route.ShardID(key, l.shardNum)
	if err != nil {
		return prepared{}, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: err.Error()}
	}
	return prepared{shard: shard, seriesKey: key}, nil
}

// prepareMeasure validates one data point and normalises tags and fields
// to schema order.
func refPrepareMeasure(l *measureLayout, req *measurev1.WriteRequest, keyBuf []byte) (*measurev1.DataPointValue, prepared, *writeError) {
	dp := req.GetDataPoint()
	if dp == nil {
		return nil, prepared{}, invalid("data_point is required")
	}
	if werr := refTimestamp(dp.GetTimestamp()); werr != nil {
		return nil, prepared{}, werr
	}
	if spec := req.GetDataPointSpec(); spec != nil {
		ss := make([]specSource, len(spec.GetTagFamilySpec()))
		for i, s := range spec.GetTagFamilySpec() {
			ss[i] = s
		}
		tf, werr := refReorderTags(l.layout, dp.GetTagFamilies(), ss)
		if werr != nil {
			return nil, prepared{}, werr
		}
		fields, werr := refReorderFields(l, dp.GetFields(), spec.GetFieldNames())
		if werr != nil {
			return nil, prepared{}, werr
		}
		dp = &measurev1.DataPointValue{Timestamp: dp.GetTimestamp(), TagFamilies: tf, Fields: fields, Version: dp.GetVersion()}
	}
	if len(dp.GetFields()) > len(l.fields) {
		return nil, prepared{}, invalid("%d fields written, schema of %s/%s has %d", len(dp.GetFields()), l.group, l.name, len(l.fields))
	}
	for i, f := range dp.GetFields() {
		if !refFieldMatches(l.fields[i].typ, f) {
			return nil, prepared{}, invalid("field %q: value %T does not fit %s", l.fields[i].name, f.GetValue(), l.fields[i].typ)
		}
	}
	p, werr := refFinishTags(l.layout, dp.GetTagFamilies(), keyBuf)
	return dp, p, werr
}

var refNullField = &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{}}

func refReorderFields(l *measureLayout, values []*modelv1.FieldValue, names []string) ([]*modelv1.FieldValue, *writeError) {
	if len(values) != len(names) {
		return nil, invalid("%d field values for %d spec fields", len(values), len(names))
	}
	out := make([]*modelv1.FieldValue, len(l.fields))
	for i := range out {
		out[i] = refNullField
	}
	for i, name := range names {
		fi, ok := l.fieldIndex[name]
		if !ok {
			return nil, invalid("field %q is not in the schema of %s/%s", name, l.group, l.name)
		}
		out[fi] = values[i]
	}
	return out, nil
}

// refVersioned is BanyanDB's version rule: a data point written without a
// version gets its message id, or the time now when it has none.
func refVersioned(dp *measurev1.DataPointValue, messageID uint64) *measurev1.DataPointValue {
	if dp.GetVersion() != 0 {
		return dp
	}
	dp = proto.Clone(dp).(*measurev1.DataPointValue)
	dp.Version = int64(messageID)
	if messageID == 0 {
		dp.Version = testNow().UnixNano()
	}
	return dp
}

package liaison

import (
	"fmt"
	"strconv"
	"time"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/pkg/route"
	"github.com/banyand-io/banyand/pkg/wire"
)

// The rules a write must meet, written once over the wire-level view of a
// write (wire.Point) in schema order: every data model's write path runs
// them on the values it parsed, whatever their order on the wire.

// writeError is a per-message failure: the status the client gets and the
// reason the liaison logs.
type writeError struct {
	status modelv1.Status
	reason string
}

func (e *writeError) Error() string { return e.status.String() + ": " + e.reason }

func invalid(format string, args ...any) *writeError {
	return &writeError{status: modelv1.Status_STATUS_INVALID_ARGUMENT, reason: fmt.Sprintf(format, args...)}
}

func invalidTimestamp(format string, args ...any) *writeError {
	return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: fmt.Sprintf(format, args...)}
}

// Timestamps must fit int64 nanoseconds (years 1677–2262, what storage
// keys hold) and, as in BanyanDB, have millisecond precision.
var (
	minTime = time.Unix(0, -1<<63).UTC().Truncate(time.Millisecond).Add(time.Millisecond)
	maxTime = time.Unix(0, 1<<63-1).UTC().Truncate(time.Millisecond)
)

// checkTimestamp is the timestamp rule, BanyanDB's: the time as protobuf
// reads it (nanos outside a second carry into the seconds, so negative
// nanos are fine) must fit int64 nanoseconds and be whole milliseconds.
func checkTimestamp(p *wire.Point) *writeError {
	if p.Timestamp == nil {
		return invalidTimestamp("timestamp is required")
	}
	ns, ok := p.UnixNano()
	switch {
	case !ok:
		return invalidTimestamp("timestamp %ds %dns is outside %s..%s", p.Seconds, p.Nanos, minTime, maxTime)
	case ns%int64(time.Millisecond) != 0:
		return invalidTimestamp("timestamp must have millisecond precision")
	}
	return nil
}

// tagKinds and fieldKinds are the value kind each schema type takes (a
// type not listed takes none); a null, set or implied, fits any. Layouts
// hold each tag's and field's kind.
var (
	tagKinds = map[databasev1.TagType]wire.Kind{
		databasev1.TagType_TAG_TYPE_STRING:       wire.KindStr,
		databasev1.TagType_TAG_TYPE_INT:          wire.KindInt,
		databasev1.TagType_TAG_TYPE_STRING_ARRAY: wire.KindStrArray,
		databasev1.TagType_TAG_TYPE_INT_ARRAY:    wire.KindIntArray,
		databasev1.TagType_TAG_TYPE_DATA_BINARY:  wire.KindBinary,
		databasev1.TagType_TAG_TYPE_TIMESTAMP:    wire.KindTimestamp,
	}
	fieldKinds = map[databasev1.FieldType]wire.Kind{
		databasev1.FieldType_FIELD_TYPE_STRING:      wire.KindStr,
		databasev1.FieldType_FIELD_TYPE_INT:         wire.KindInt,
		databasev1.FieldType_FIELD_TYPE_FLOAT:       wire.KindFloat,
		databasev1.FieldType_FIELD_TYPE_DATA_BINARY: wire.KindBinary,
	}
)

// checkTags is the tag rule: at most the schema's families and tags,
// each value of its tag's type.
func (l *layout) checkTags(p *wire.Point) *writeError {
	if len(p.FamEnd) > len(l.families) {
		return invalid("%d tag families written, schema of %s/%s has %d", len(p.FamEnd), l.group, l.name, len(l.families))
	}
	for fi := range p.FamEnd {
		spec, tags := &l.families[fi], p.Family(fi)
		if len(tags) > len(spec.tags) {
			return invalid("tag family %q: %d tags written, schema has %d", spec.name, len(tags), len(spec.tags))
		}
		for ti := range tags {
			if k := tags[ti].Kind; !k.IsNull() && k != spec.kinds[ti] {
				return invalid("tag family %q tag %d: a %s value does not fit %s", spec.name, ti, k, spec.tags[ti])
			}
		}
	}
	return nil
}

// checkFields is the field rule: at most the schema's fields, each value
// of its field's type.
func (l *layout) checkFields(p *wire.Point) *writeError {
	if len(p.Fields) > len(l.fields) {
		return invalid("%d fields written, schema of %s/%s has %d", len(p.Fields), l.group, l.name, len(l.fields))
	}
	for i := range p.Fields {
		if k := p.Fields[i].Kind; !k.IsNull() && k != l.fields[i].kind {
			return invalid("field %q: a %s value does not fit %s", l.fields[i].name, k, l.fields[i].typ)
		}
	}
	return nil
}

// prepared is a validated write ready to publish.
type prepared struct {
	shard     uint32
	seriesKey []byte
}

// prepare applies the rules after the timestamp's to a write in schema
// order and computes its series key (appended to keyBuf[:0]) and shard.
func (l *layout) prepare(p *wire.Point, keyBuf []byte) (prepared, *writeError) {
	if werr := l.checkFields(p); werr != nil {
		return prepared{}, werr
	}
	if werr := l.checkTags(p); werr != nil {
		return prepared{}, werr
	}
	key := route.AppendSeriesName(keyBuf[:0], l.name)
	for _, ref := range l.entity {
		v, ok := p.Tag(ref.family, ref.tag)
		if !ok || v.Kind.IsNull() {
			return prepared{}, invalid("entity tag %q is missing or null", ref.name)
		}
		var ev route.EntityValue
		if v.Kind == wire.KindStr {
			// Converted here, not in entityValue: a string that does not
			// escape is not allocated.
			ev = route.StrValue(string(v.Bytes))
		} else {
			ev = entityValue(v)
		}
		var err error
		if key, err = route.AppendEntityValue(key, ev); err != nil {
			return prepared{}, invalid("entity tag %q: %v", ref.name, err)
		}
	}
	shard, err := route.ShardID(key, l.shardNum)
	if err != nil {
		return prepared{}, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: err.Error()}
	}
	return prepared{shard: shard, seriesKey: key}, nil
}

// entityValue converts a non-null tag value to its series-key form, the
// same form data nodes compute from decoded values (schema.EntityValue),
// so the keys the liaison routes by and the keys data nodes seek by agree.
func entityValue(v *wire.Value) route.EntityValue {
	switch v.Kind {
	case wire.KindStr:
		return route.StrValue(string(v.Bytes))
	case wire.KindInt:
		return route.IntValue(v.Int)
	case wire.KindBinary:
		return route.BytesValue(v.Bytes)
	case wire.KindStrArray:
		var s []string
		v.StrArray(func(b []byte) { s = append(s, string(b)) })
		return route.StrArrayValue(s...)
	case wire.KindIntArray:
		var i []int64
		v.IntArray(func(x int64) { i = append(i, x) })
		return route.IntArrayValue(i...)
	case wire.KindTimestamp:
		s, n := v.Time()
		return route.TimestampValue(time.Unix(s, int64(n)))
	}
	return route.EntityValue{} // KindInvalid: AppendEntityValue refuses it
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

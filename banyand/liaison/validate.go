package liaison

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/banyand/storage"
	"github.com/banyand-io/banyand/pkg/route"
)

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

// Timestamps must fit int64 nanoseconds (years 1677–2262, what storage
// keys hold) and, as in BanyanDB, have millisecond precision.
var (
	minTime = time.Unix(0, -1<<63).UTC().Truncate(time.Millisecond).Add(time.Millisecond)
	maxTime = time.Unix(0, 1<<63-1).UTC().Truncate(time.Millisecond)
)

func checkTimestamp(ts *timestamppb.Timestamp) *writeError {
	if ts == nil {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: "timestamp is required"}
	}
	if err := ts.CheckValid(); err != nil {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: err.Error()}
	}
	t := ts.AsTime()
	if t.Before(minTime) || t.After(maxTime) {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: fmt.Sprintf("timestamp %s is outside %s..%s", t, minTime, maxTime)}
	}
	if ts.GetNanos()%int32(time.Millisecond) != 0 {
		return &writeError{status: modelv1.Status_STATUS_INVALID_TIMESTAMP, reason: "timestamp must have millisecond precision"}
	}
	return nil
}

// timestampValid is checkTimestamp's verdict on a timestamp's parts,
// without building one (it escaped to the heap, once a write) or saying
// why: the fast path only needs yes or no, and on no the slow path runs
// checkTimestamp for the answer.
func timestampValid(seconds int64, nanos int32) bool {
	if nanos < 0 || nanos >= int32(time.Second) || nanos%int32(time.Millisecond) != 0 {
		return false
	}
	// Compare seconds first: time.Unix of a huge value is not meaningful.
	if seconds < minTime.Unix() || seconds > maxTime.Unix() {
		return false
	}
	t := time.Unix(seconds, int64(nanos))
	return !t.Before(minTime) && !t.After(maxTime)
}

// tagMatches reports whether v may be stored in a tag of type t. Null fits
// any tag.
func tagMatches(t databasev1.TagType, v *modelv1.TagValue) bool {
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

func fieldMatches(t databasev1.FieldType, v *modelv1.FieldValue) bool {
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
func entityValue(ref tagRef, v *modelv1.TagValue) (route.EntityValue, *writeError) {
	if _, null := v.GetValue().(*modelv1.TagValue_Null); !null {
		if ev, err := storage.EntityValue(v); err == nil {
			return ev, nil
		}
	}
	return route.EntityValue{}, invalid("entity tag %q is missing or null", ref.name)
}

// checkTags validates positional tag families against the layout.
func (l *layout) checkTags(families []*modelv1.TagFamilyForWrite) *writeError {
	if len(families) > len(l.families) {
		return invalid("%d tag families written, schema of %s/%s has %d", len(families), l.group, l.name, len(l.families))
	}
	for fi, f := range families {
		spec := l.families[fi]
		if len(f.GetTags()) > len(spec.tags) {
			return invalid("tag family %q: %d tags written, schema has %d", spec.name, len(f.GetTags()), len(spec.tags))
		}
		for ti, v := range f.GetTags() {
			if !tagMatches(spec.tags[ti], v) {
				return invalid("tag family %q tag %d: value %T does not fit %s", spec.name, ti, v.GetValue(), spec.tags[ti])
			}
		}
	}
	return nil
}

// seriesKey appends the series key of a write whose tags passed checkTags.
func (l *layout) seriesKey(dst []byte, families []*modelv1.TagFamilyForWrite) ([]byte, *writeError) {
	dst = route.AppendSeriesName(dst, l.name)
	for _, ref := range l.entity {
		var v *modelv1.TagValue
		if ref.family < len(families) && ref.tag < len(families[ref.family].GetTags()) {
			v = families[ref.family].GetTags()[ref.tag]
		}
		ev, werr := entityValue(ref, v)
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
func (l *layout) reorderTags(families []*modelv1.TagFamilyForWrite, specs []specSource) ([]*modelv1.TagFamilyForWrite, *writeError) {
	if len(families) != len(specs) {
		return nil, invalid("%d tag families written but the spec names %d", len(families), len(specs))
	}
	out := make([]*modelv1.TagFamilyForWrite, len(l.families))
	for i, fl := range l.families {
		out[i] = &modelv1.TagFamilyForWrite{Tags: make([]*modelv1.TagValue, len(fl.tags))}
		for j := range out[i].Tags {
			out[i].Tags[j] = nullTag
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

var nullTag = &modelv1.TagValue{Value: &modelv1.TagValue_Null{}}

// prepared is a validated write ready to publish.
type prepared struct {
	shard     uint32
	seriesKey []byte
}

// prepareStream validates one stream write and normalises its tags to
// schema order. keyBuf is reused for the series key.
func (l *streamLayout) prepareStream(req *streamv1.WriteRequest, keyBuf []byte) (*streamv1.ElementValue, prepared, *writeError) {
	el := req.GetElement()
	if el == nil {
		return nil, prepared{}, invalid("element is required")
	}
	if werr := checkTimestamp(el.GetTimestamp()); werr != nil {
		return nil, prepared{}, werr
	}
	if specs := req.GetTagFamilySpec(); len(specs) > 0 {
		ss := make([]specSource, len(specs))
		for i, s := range specs {
			ss[i] = s
		}
		tf, werr := l.reorderTags(el.GetTagFamilies(), ss)
		if werr != nil {
			return nil, prepared{}, werr
		}
		el = &streamv1.ElementValue{ElementId: el.GetElementId(), Timestamp: el.GetTimestamp(), TagFamilies: tf}
	}
	return l.finish(el, el.GetTagFamilies(), keyBuf)
}

func (l *layout) finishTags(families []*modelv1.TagFamilyForWrite, keyBuf []byte) (prepared, *writeError) {
	if werr := l.checkTags(families); werr != nil {
		return prepared{}, werr
	}
	key, werr := l.seriesKey(keyBuf[:0], families)
	if werr != nil {
		return prepared{}, werr
	}
	shard, err := route.ShardID(key, l.shardNum)
	if err != nil {
		return prepared{}, &writeError{status: modelv1.Status_STATUS_INTERNAL_ERROR, reason: err.Error()}
	}
	return prepared{shard: shard, seriesKey: key}, nil
}

func (l *streamLayout) finish(el *streamv1.ElementValue, families []*modelv1.TagFamilyForWrite, keyBuf []byte) (*streamv1.ElementValue, prepared, *writeError) {
	p, werr := l.finishTags(families, keyBuf)
	return el, p, werr
}

// prepareMeasure validates one data point and normalises tags and fields
// to schema order.
func (l *measureLayout) prepareMeasure(req *measurev1.WriteRequest, keyBuf []byte) (*measurev1.DataPointValue, prepared, *writeError) {
	dp := req.GetDataPoint()
	if dp == nil {
		return nil, prepared{}, invalid("data_point is required")
	}
	if werr := checkTimestamp(dp.GetTimestamp()); werr != nil {
		return nil, prepared{}, werr
	}
	if spec := req.GetDataPointSpec(); spec != nil {
		ss := make([]specSource, len(spec.GetTagFamilySpec()))
		for i, s := range spec.GetTagFamilySpec() {
			ss[i] = s
		}
		tf, werr := l.reorderTags(dp.GetTagFamilies(), ss)
		if werr != nil {
			return nil, prepared{}, werr
		}
		fields, werr := l.reorderFields(dp.GetFields(), spec.GetFieldNames())
		if werr != nil {
			return nil, prepared{}, werr
		}
		dp = &measurev1.DataPointValue{Timestamp: dp.GetTimestamp(), TagFamilies: tf, Fields: fields, Version: dp.GetVersion()}
	}
	if len(dp.GetFields()) > len(l.fields) {
		return nil, prepared{}, invalid("%d fields written, schema of %s/%s has %d", len(dp.GetFields()), l.group, l.name, len(l.fields))
	}
	for i, f := range dp.GetFields() {
		if !fieldMatches(l.fields[i], f) {
			return nil, prepared{}, invalid("field %q: value %T does not fit %s", l.schema.GetFields()[i].GetName(), f.GetValue(), l.fields[i])
		}
	}
	p, werr := l.finishTags(dp.GetTagFamilies(), keyBuf)
	return dp, p, werr
}

var nullField = &modelv1.FieldValue{Value: &modelv1.FieldValue_Null{}}

func (l *measureLayout) reorderFields(values []*modelv1.FieldValue, names []string) ([]*modelv1.FieldValue, *writeError) {
	if len(values) != len(names) {
		return nil, invalid("%d field values for %d spec fields", len(values), len(names))
	}
	out := make([]*modelv1.FieldValue, len(l.fields))
	for i := range out {
		out[i] = nullField
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

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// The fast path. Decoding a WriteRequest with proto.Unmarshal allocates
// every tag value and costs more than the rest of the liaison's work per
// message; the liaison needs only the timestamp, the kind of each tag and
// field, and the entity values. So a write is first read at the wire level:
// a request in the usual shape (each field once, no unknown fields, tag and
// field values of the scalar kinds, strings valid UTF-8) and valid for its
// schema is prepared from that, and its element or data point is forwarded
// as received. Anything else, including every invalid write, takes the slow
// path (proto.Unmarshal and the checks above), so statuses and reasons are
// the same whichever path a write takes.

// wireKind is the kind of a tag or field value read at the wire level.
type wireKind uint8

const (
	wireNone   wireKind = iota // no value set: a null
	wireNull                   // null set explicitly
	wireStr                    // model.v1.Str
	wireInt                    // model.v1.Int
	wireBinary                 // binary_data
	wireFloat                  // model.v1.Float (fields only)
)

// wireValue is one tag or field value; str aliases the request's bytes.
type wireValue struct {
	kind wireKind
	str  []byte
	i    int64
}

// wireWrite is a WriteRequest read at the wire level. Its slices alias the
// request's bytes and are reused from one request to the next.
type wireWrite struct {
	messageID uint64
	metadata  []byte // the Metadata bytes; nil when absent
	value     []byte // the ElementValue or DataPointValue bytes
	seconds   int64
	nanos     int32
	tags      []wireValue // tag values of all families, in order
	famEnd    []int       // tags[famEnd[i-1]:famEnd[i]] is family i
	fields    []wireValue // measures only
}

func (w *wireWrite) reset() {
	*w = wireWrite{tags: w.tags[:0], famEnd: w.famEnd[:0], fields: w.fields[:0]}
}

// wireFields calls fn for each field of b; it returns false on malformed
// input or when fn does.
func wireFields(b []byte, fn func(n protowire.Number, t protowire.Type, v []byte, x uint64) bool) bool {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		var (
			v []byte
			x uint64
		)
		switch t {
		case protowire.VarintType:
			x, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, l = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
			if v == nil && l >= 0 {
				v = []byte{}
			}
		default:
			return false
		}
		if l < 0 || !fn(n, t, v, x) {
			return false
		}
		b = b[l:]
	}
	return true
}

// parseStreamRequest reads a stream.v1.WriteRequest; false means "take
// the slow path", not "invalid".
func parseStreamRequest(raw []byte, w *wireWrite) bool {
	w.reset()
	return parseRequest(raw, w) && w.value != nil && parseElement(w.value, w)
}

// parseMeasureRequest reads a measure.v1.WriteRequest.
func parseMeasureRequest(raw []byte, w *wireWrite) bool {
	w.reset()
	return parseRequest(raw, w) && w.value != nil && parseDataPoint(w.value, w)
}

// parseRequest reads metadata (1), the element or data point (2) and
// message_id (3); a spec (4) or any other field takes the slow path.
func parseRequest(raw []byte, w *wireWrite) bool {
	var seen [4]bool
	return wireFields(raw, func(n protowire.Number, t protowire.Type, v []byte, x uint64) bool {
		if n < 1 || n > 3 || seen[n] {
			return false
		}
		seen[n] = true
		switch {
		case n == 1 && t == protowire.BytesType:
			w.metadata = v
		case n == 2 && t == protowire.BytesType:
			w.value = v
		case n == 3 && t == protowire.VarintType:
			w.messageID = x
		default:
			return false
		}
		return true
	})
}

func parseElement(b []byte, w *wireWrite) bool {
	var seen [3]bool
	hasTS := false
	ok := wireFields(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) bool {
		if t != protowire.BytesType {
			return false
		}
		switch n {
		case 1, 2:
			if seen[n] {
				return false
			}
			seen[n] = true
			if n == 1 {
				return utf8.Valid(v)
			}
			hasTS = true
			return parseTimestamp(v, w)
		case 3:
			return parseFamily(v, w)
		}
		return false
	})
	return ok && hasTS
}

func parseDataPoint(b []byte, w *wireWrite) bool {
	var seenTS, seenVersion bool
	ok := wireFields(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) bool {
		switch {
		case n == 1 && t == protowire.BytesType && !seenTS:
			seenTS = true
			return parseTimestamp(v, w)
		case n == 2 && t == protowire.BytesType:
			return parseFamily(v, w)
		case n == 3 && t == protowire.BytesType:
			fv, ok := parseValue(v, false)
			w.fields = append(w.fields, fv)
			return ok
		case n == 4 && t == protowire.VarintType && !seenVersion:
			seenVersion = true
			return true
		}
		return false
	})
	return ok && seenTS
}

func parseTimestamp(b []byte, w *wireWrite) bool {
	var seen [3]bool
	return wireFields(b, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) bool {
		if n < 1 || n > 2 || t != protowire.VarintType || seen[n] {
			return false
		}
		seen[n] = true
		if n == 1 {
			w.seconds = int64(x)
		} else {
			w.nanos = int32(x)
		}
		return true
	})
}

// parseFamily reads a TagFamilyForWrite: tags (1) only.
func parseFamily(b []byte, w *wireWrite) bool {
	ok := wireFields(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) bool {
		if n != 1 || t != protowire.BytesType {
			return false
		}
		tv, ok := parseValue(v, true)
		w.tags = append(w.tags, tv)
		return ok
	})
	w.famEnd = append(w.famEnd, len(w.tags))
	return ok
}

// parseValue reads a TagValue (tag) or FieldValue: at most one member of
// its oneof, of a scalar kind.
func parseValue(b []byte, tag bool) (wireValue, bool) {
	var val wireValue
	set := false
	ok := wireFields(b, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) bool {
		if set {
			return false
		}
		set = true
		var str, integer, binary, float protowire.Number = 2, 4, 6, 0
		if !tag {
			str, integer, binary, float = 2, 3, 4, 5
		}
		switch {
		case n == 1 && t == protowire.VarintType:
			val.kind = wireNull
			return true
		case t != protowire.BytesType:
			return false
		case n == str:
			val.kind = wireStr
			return parseScalar(v, protowire.BytesType, func(s []byte, _ uint64) bool {
				val.str = s
				return utf8.Valid(s)
			})
		case n == integer:
			val.kind = wireInt
			return parseScalar(v, protowire.VarintType, func(_ []byte, x uint64) bool {
				val.i = int64(x)
				return true
			})
		case n == binary:
			val.kind = wireBinary
			val.str = v
			return true
		case n == float:
			val.kind = wireFloat
			return parseScalar(v, protowire.Fixed64Type, func([]byte, uint64) bool { return true })
		}
		return false
	})
	return val, ok
}

// parseScalar reads a Str, Int or Float: field 1 of type t, at most once.
func parseScalar(b []byte, t protowire.Type, fn func(v []byte, x uint64) bool) bool {
	seen := false
	return wireFields(b, func(n protowire.Number, ft protowire.Type, v []byte, x uint64) bool {
		if n != 1 || ft != t || seen {
			return false
		}
		seen = true
		return fn(v, x)
	})
}

var wireTagTypes = [...]databasev1.TagType{
	wireStr:    databasev1.TagType_TAG_TYPE_STRING,
	wireInt:    databasev1.TagType_TAG_TYPE_INT,
	wireBinary: databasev1.TagType_TAG_TYPE_DATA_BINARY,
}

var wireFieldTypes = [...]databasev1.FieldType{
	wireStr:    databasev1.FieldType_FIELD_TYPE_STRING,
	wireInt:    databasev1.FieldType_FIELD_TYPE_INT,
	wireBinary: databasev1.FieldType_FIELD_TYPE_DATA_BINARY,
	wireFloat:  databasev1.FieldType_FIELD_TYPE_FLOAT,
}

// fastPrepare checks a parsed write against the layout and computes its
// series key and shard. ok false means "take the slow path": the write may
// be invalid, or valid in a way only the slow path handles.
func (l *layout) fastPrepare(w *wireWrite, keyBuf []byte) (p prepared, ok bool) {
	if !timestampValid(w.seconds, w.nanos) || len(w.famEnd) > len(l.families) {
		return prepared{}, false
	}
	start := 0
	for fi, end := range w.famEnd {
		spec := l.families[fi].tags
		if end-start > len(spec) {
			return prepared{}, false
		}
		for ti, v := range w.tags[start:end] {
			if v.kind > wireNull && (v.kind == wireFloat || wireTagTypes[v.kind] != spec[ti]) {
				return prepared{}, false
			}
		}
		start = end
	}
	key := route.AppendSeriesName(keyBuf[:0], l.name)
	for _, ref := range l.entity {
		if ref.family >= len(w.famEnd) {
			return prepared{}, false
		}
		idx := ref.tag
		if ref.family > 0 {
			idx += w.famEnd[ref.family-1]
		}
		if idx >= w.famEnd[ref.family] {
			return prepared{}, false
		}
		var ev route.EntityValue
		switch v := w.tags[idx]; v.kind {
		case wireStr:
			ev = route.StrValue(string(v.str))
		case wireInt:
			ev = route.IntValue(v.i)
		case wireBinary:
			ev = route.BytesValue(v.str)
		default:
			return prepared{}, false
		}
		var err error
		if key, err = route.AppendEntityValue(key, ev); err != nil {
			return prepared{}, false
		}
	}
	shard, err := route.ShardID(key, l.shardNum)
	if err != nil {
		return prepared{}, false
	}
	return prepared{shard: shard, seriesKey: key}, true
}

// fastPrepareMeasure is fastPrepare plus the fields.
func (l *measureLayout) fastPrepareMeasure(w *wireWrite, keyBuf []byte) (prepared, bool) {
	if len(w.fields) > len(l.fields) {
		return prepared{}, false
	}
	for i, f := range w.fields {
		if f.kind > wireNull && wireFieldTypes[f.kind] != l.fields[i] {
			return prepared{}, false
		}
	}
	return l.fastPrepare(w, keyBuf)
}

package bench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	protoapi "google.golang.org/protobuf/proto"

	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	tracev1 "github.com/banyand-io/banyand/api/proto/banyandb/trace/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// The load tool encodes its write requests and decodes the responses at
// the wire level: the messages a run writes differ only in a few fields,
// so the rest is encoded once. The bytes are what proto.Marshal writes for
// the same request (wire_test.go checks it), so the server sees exactly
// what a BanyanDB client would send; the tool just spends less of the
// CPUs it shares with the server on building them.

// wireResponse is the part of a write response the tool reads.
type wireResponse struct {
	id     uint64
	status string
}

// UnmarshalWire implements wire.Unmarshaler: the response is read in
// place, with no allocation for the usual status.
func (r *wireResponse) UnmarshalWire(data mem.BufferSlice) error {
	return r.parse(data, wire.ParseWriteResponse)
}

// parse reads data with parse, a stream/measure or trace response parser.
func (r *wireResponse) parse(data mem.BufferSlice, parse func([]byte, *wire.WriteResponse) error) error {
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		b = data.Materialize()
	}
	var resp wire.WriteResponse
	if err := parse(b, &resp); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	r.id, r.status = resp.MessageID, statusSucceed
	if string(resp.Status) != statusSucceed {
		r.status = string(resp.Status)
	}
	return nil
}

// encoded holds the parts of a run's requests that never change, encoded.
type encoded struct {
	metadata []byte   // the Metadata, sent in the first request of a stream
	data     []byte   // the "data" tag family, the same in every message
	score    []byte   // measure: the score field, the run's nonce
	entity   [][]byte // the "searchable" tag family of each entity; nil when not cached
	// spec is the spec field(s) a flush's first request carries (field 4:
	// the tag family specs of a stream, the data point spec of a measure),
	// naming the values in the order they are written; nil without
	// --flush-size.
	spec []byte
	// traceSpec is a trace run's tag spec (--flush-size), traceOrder the
	// schema position of each tag it names.
	traceSpec  []byte
	traceOrder []int
}

func (m *messages) encode() error {
	var err error
	marshal := func(msg protoapi.Message) []byte {
		b, merr := protoapi.Marshal(msg)
		err = errors.Join(err, merr)
		return b
	}
	m.enc.metadata = marshal(m.md)
	m.enc.data = marshal(&modelv1.TagFamilyForWrite{Tags: m.inWrittenOrder(dataTagSpecs(m.shape), m.data)})
	m.enc.score = marshal(&modelv1.FieldValue{Value: &modelv1.FieldValue_Float{Float: &modelv1.Float{Value: m.nonce}}})
	if m.oap != nil {
		m.oap = newOAPEncoding(m, m.oap.layout)
	}
	if m.spec && m.spansPerTrace > 0 {
		var names []string
		names, m.enc.traceOrder = traceSpecOrder(m.md)
		m.enc.traceSpec = marshal(&tracev1.TagSpec{TagNames: names})
	} else if m.spec {
		m.enc.spec = m.encodeSpec(marshal)
	}
	if m.tags != nil {
		m.enc.entity = make([][]byte, len(m.tags))
		for e, tags := range m.tags {
			m.enc.entity[e] = marshal(&modelv1.TagFamilyForWrite{Tags: tags})
		}
	}
	return err
}

func (m *messages) entityFamily(e int64) []byte {
	if m.enc.entity != nil {
		return m.enc.entity[e]
	}
	b, _ := protoapi.Marshal(&modelv1.TagFamilyForWrite{Tags: m.writtenTags(e)})
	return b
}

func sizeField(content int) int { return 1 + protowire.SizeBytes(content) }

func appendField(b []byte, num protowire.Number, content []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, content)
}

// timestamp encodes message seq's google.protobuf.Timestamp.
func (m *messages) timestamp(b []byte, seq int64) []byte {
	ms := m.millis(seq)
	if s := ms / 1000; s != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s))
	}
	if n := (ms % 1000) * 1e6; n != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(n))
	}
	return b
}

// encodeSpec encodes the spec of the tool's values as field 4 of a write
// request, as SkyWalking OAP names them: tag families, the tags of each and
// a measure's fields in alphabetical order. That is not the schema's order
// (data sorts before searchable and default, instance before service,
// score before value), so the server places every value by the spec; the
// requests list their values in the same order.
func (m *messages) encodeSpec(marshal func(protoapi.Message) []byte) []byte {
	if m.measure {
		schema := measureSchema(m.md, m.shape)
		dps := &measurev1.DataPointSpec{FieldNames: sortedFields(schema.GetFields())}
		for _, f := range sortedFamilies(schema.GetTagFamilies()) {
			dps.TagFamilySpec = append(dps.TagFamilySpec, &measurev1.TagFamilySpec{Name: f.GetName(), TagNames: sortedTags(f)})
		}
		return appendField(nil, 4, marshal(dps))
	}
	var b []byte
	for _, f := range sortedFamilies(streamSchema(m.md, m.shape).GetTagFamilies()) {
		b = appendField(b, 4, marshal(&streamv1.TagFamilySpec{Name: f.GetName(), TagNames: sortedTags(f)}))
	}
	return b
}

func sortedFamilies(fams []*databasev1.TagFamilySpec) []*databasev1.TagFamilySpec {
	return slices.SortedFunc(slices.Values(fams), func(a, b *databasev1.TagFamilySpec) int {
		return strings.Compare(a.GetName(), b.GetName())
	})
}

func sortedTags(f *databasev1.TagFamilySpec) []string {
	var names []string
	for _, t := range f.GetTags() {
		names = append(names, t.GetName())
	}
	slices.Sort(names)
	return names
}

func sortedFields(fields []*databasev1.FieldSpec) []string {
	var names []string
	for _, f := range fields {
		names = append(names, f.GetName())
	}
	slices.Sort(names)
	return names
}

// writeRequest encodes a stream.v1 or measure.v1 WriteRequest: metadata
// (1) and, with --flush-size, the spec (4) when withMetadata, the element
// or data point (2), message_id (3).
// value appends the element or data point's own fields to its argument.
func (m *messages) writeRequest(id uint64, withMetadata bool, valueSize int, value func([]byte) []byte) []byte {
	size := sizeField(valueSize) + 1 + protowire.SizeVarint(id)
	if withMetadata {
		size += sizeField(len(m.enc.metadata)) + len(m.enc.spec)
	}
	b := make([]byte, 0, size)
	if withMetadata {
		b = appendField(b, 1, m.enc.metadata)
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(valueSize))
	b = value(b)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, id)
	if withMetadata {
		b = append(b, m.enc.spec...)
	}
	return b
}

// streamRequest encodes message seq as a stream WriteRequest with id.
func (m *messages) streamRequest(id uint64, seq int64, withMetadata bool) []byte {
	var idBuf [64]byte
	elID := strconv.AppendInt(append(append(idBuf[:0], m.runID...), '-'), seq, 10)
	var tsBuf [24]byte
	ts := m.timestamp(tsBuf[:0], seq)
	fam := m.entityFamily(m.entity(seq))
	size := sizeField(len(elID)) + sizeField(len(ts)) + sizeField(len(fam)) + sizeField(len(m.enc.data))
	return m.writeRequest(id, withMetadata, size, func(b []byte) []byte {
		b = appendField(b, 1, elID) // element_id
		b = appendField(b, 2, ts)   // timestamp
		return m.families(b, 3, fam)
	})
}

// measureRequest encodes message seq as a measure WriteRequest with id:
// the value field is seq.
func (m *messages) measureRequest(id uint64, seq int64, withMetadata bool) []byte {
	var tsBuf [24]byte
	ts := m.timestamp(tsBuf[:0], seq)
	fam := m.entityFamily(m.entity(seq))
	var intBuf, valueBuf [16]byte
	intMsg := intBuf[:0] // model.v1.Int{value: seq}
	if seq != 0 {
		intMsg = protowire.AppendVarint(protowire.AppendTag(intMsg, 1, protowire.VarintType), uint64(seq))
	}
	value := appendField(valueBuf[:0], 3, intMsg) // FieldValue{int: ...}
	size := sizeField(len(ts)) + sizeField(len(fam)) + sizeField(len(m.enc.data)) + sizeField(len(value)) + sizeField(len(m.enc.score))
	return m.writeRequest(id, withMetadata, size, func(b []byte) []byte {
		b = appendField(b, 1, ts) // timestamp
		b = m.families(b, 2, fam)
		if m.spec { // fields in the spec's order: score, value
			b = appendField(b, 3, m.enc.score)
			return appendField(b, 3, value)
		}
		b = appendField(b, 3, value) // fields in the schema's: value, score
		return appendField(b, 3, m.enc.score)
	})
}

// families appends the tag families as field num: the entity family
// (searchable or default), then data in the schema's order; data first in
// the spec's.
func (m *messages) families(b []byte, num protowire.Number, entity []byte) []byte {
	if m.spec {
		b = appendField(b, num, m.enc.data)
		return appendField(b, num, entity)
	}
	b = appendField(b, num, entity)
	return appendField(b, num, m.enc.data)
}

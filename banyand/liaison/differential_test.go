package liaison

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// The differential tests send arbitrary bytes as the second message of a
// Write stream (the first, the primer, only sets the stream's metadata, so
// bytes without metadata still reach validation) and compare what Write
// does with the reference: proto.Unmarshal, then the reference rules on
// the decoded message (reference_test.go), then proto.Marshal.

const primerID = 1 << 62

// reference is what the reference rules decide for one message.
type reference struct {
	decodeErr bool // the bytes are not a WriteRequest: the RPC fails
	messageID uint64
	status    modelv1.Status
	group     string
	shard     uint32
	payload   []byte // on success
}

func referenceStream(cache *layouts, primer *commonv1.Metadata, raw []byte) reference {
	var req streamv1.WriteRequest
	if proto.Unmarshal(raw, &req) != nil {
		return reference{decodeErr: true}
	}
	ref := reference{messageID: req.GetMessageId()}
	md := refMetadata(primer, req.GetMetadata())
	l := cache.snapshot().streams[nameKey{Group: md.GetGroup(), Name: md.GetName()}]
	if l == nil {
		ref.status = modelv1.Status_STATUS_NOT_FOUND
		return ref
	}
	if ref.status = refSchemaStatus(l.layout, md); ref.status != modelv1.Status_STATUS_SUCCEED {
		return ref
	}
	el, prep, werr := refPrepareStream(l, &req, nil)
	if werr != nil {
		ref.status = werr.status
		return ref
	}
	payload, err := proto.Marshal(&clusterv1.StreamWrite{
		Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
		Element: el, SchemaModRevision: l.modRevision, Version: testNow().UnixNano(),
	})
	if err != nil {
		ref.status = modelv1.Status_STATUS_INTERNAL_ERROR
		return ref
	}
	ref.status, ref.group, ref.shard, ref.payload = modelv1.Status_STATUS_SUCCEED, l.group, prep.shard, payload
	return ref
}

func referenceMeasure(cache *layouts, primer *commonv1.Metadata, raw []byte) reference {
	var req measurev1.WriteRequest
	if proto.Unmarshal(raw, &req) != nil {
		return reference{decodeErr: true}
	}
	ref := reference{messageID: req.GetMessageId()}
	md := refMetadata(primer, req.GetMetadata())
	l := cache.snapshot().measures[nameKey{Group: md.GetGroup(), Name: md.GetName()}]
	if l == nil {
		ref.status = modelv1.Status_STATUS_NOT_FOUND
		return ref
	}
	if ref.status = refSchemaStatus(l.layout, md); ref.status != modelv1.Status_STATUS_SUCCEED {
		return ref
	}
	d, prep, werr := refPrepareMeasure(l, &req, nil)
	if werr != nil {
		ref.status = werr.status
		return ref
	}
	d = refVersioned(d, req.GetMessageId())
	payload, err := proto.Marshal(&clusterv1.MeasureWrite{
		Group: l.group, Name: l.name, ShardId: prep.shard, SeriesKey: prep.seriesKey,
		DataPoint: d, SchemaModRevision: l.modRevision,
	})
	if err != nil {
		ref.status = modelv1.Status_STATUS_INTERNAL_ERROR
		return ref
	}
	ref.status, ref.group, ref.shard, ref.payload = modelv1.Status_STATUS_SUCCEED, l.group, prep.shard, payload
	return ref
}

// refMetadata is the metadata in force for a message: its own, or the
// primer's.
func refMetadata(primer, own *commonv1.Metadata) *commonv1.Metadata {
	if own != nil {
		return own
	}
	return primer
}

// refSchemaStatus is the schema revision rule: a write naming another
// revision than l's is EXPIRED_SCHEMA; SUCCEED means it passes.
func refSchemaStatus(l *layout, md *commonv1.Metadata) modelv1.Status {
	if md.GetModRevision() > 0 && md.GetModRevision() != l.modRevision {
		return modelv1.Status_STATUS_EXPIRED_SCHEMA
	}
	return modelv1.Status_STATUS_SUCCEED
}

// answer is the part of a WriteResponse the comparison needs.
type answer interface {
	GetMessageId() uint64
	GetStatus() string
}

// compare checks one Write run (primer, then raw) against ref. newPayload
// returns an empty StreamWrite or MeasureWrite.
func compare[Resp answer](t testing.TB, raw []byte, res writeResult[Resp], ref reference, newPayload func() proto.Message) {
	t.Helper()
	if ref.decodeErr {
		if status.Code(res.err) != codes.Internal {
			t.Fatalf("%x: the reference cannot decode it; Write returned %v, want an Internal error", raw, res.err)
		}
		if len(res.resps) != 1 || len(res.msgs) != 0 {
			t.Fatalf("%x: undecodable message: %d answers and %d published, want 1 (the primer) and 0", raw, len(res.resps), len(res.msgs))
		}
		return
	}
	if res.err != nil {
		t.Fatalf("%x: Write: %v; the reference decodes it (status %s)", raw, res.err, ref.status)
	}
	if len(res.resps) != 2 {
		t.Fatalf("%x: %d answers, want 2", raw, len(res.resps))
	}
	if p := res.resps[0]; p.GetMessageId() != primerID || p.GetStatus() != sInvalidArg.String() {
		t.Fatalf("primer answered %d %s", p.GetMessageId(), p.GetStatus())
	}
	got := res.resps[1]
	if got.GetMessageId() != ref.messageID || got.GetStatus() != ref.status.String() {
		t.Fatalf("%x: answered %d %s, the reference %d %s", raw, got.GetMessageId(), got.GetStatus(), ref.messageID, ref.status)
	}
	if ref.status != modelv1.Status_STATUS_SUCCEED {
		if len(res.msgs) != 0 {
			t.Fatalf("%x: rejected (%s) but published", raw, ref.status)
		}
		return
	}
	if len(res.msgs) != 1 {
		t.Fatalf("%x: %d messages published, want 1", raw, len(res.msgs))
	}
	msg := res.msgs[0]
	if msg.Group != ref.group || msg.Shard != ref.shard {
		t.Fatalf("%x: published to %s/%d, the reference to %s/%d", raw, msg.Group, msg.Shard, ref.group, ref.shard)
	}
	gotW, wantW := newPayload(), newPayload()
	if err := proto.Unmarshal(msg.Payload, gotW); err != nil {
		t.Fatalf("%x: payload does not decode: %v", raw, err)
	}
	if err := proto.Unmarshal(ref.payload, wantW); err != nil {
		t.Fatalf("%x: reference payload does not decode: %v", raw, err)
	}
	if !proto.Equal(gotW, wantW) {
		t.Fatalf("%x: payload\n got %v\nwant %v", raw, gotW, wantW)
	}
}

// differ runs the differential check for one kind of write.
type differ struct {
	cache  *layouts
	primer []byte
	md     *commonv1.Metadata
	stream bool
}

func newDiffer(t testing.TB, stream bool) *differ {
	d := &differ{cache: newTestCache(t), stream: stream}
	if stream {
		d.md = streamMD("s")
		d.primer = mustMarshal(t, &streamv1.WriteRequest{Metadata: d.md, MessageId: primerID})
	} else {
		d.md = streamMD("m")
		d.primer = mustMarshal(t, &measurev1.WriteRequest{Metadata: d.md, MessageId: primerID})
	}
	return d
}

func (d *differ) check(t testing.TB, raw []byte) {
	t.Helper()
	q := &fakeQueue{}
	svc := NewServices(WriteConfig{}, Deps{Logger: discardLogger, Schema: d.cache.src, Queue: q, Now: testNow})
	if d.stream {
		res := runStreamWrite(svc, q, d.primer, raw)
		compare(t, raw, res, referenceStream(d.cache, d.md, raw), func() proto.Message { return new(clusterv1.StreamWrite) })
		return
	}
	res := runMeasureWrite(svc, q, d.primer, raw)
	compare(t, raw, res, referenceMeasure(d.cache, d.md, raw), func() proto.Message { return new(clusterv1.MeasureWrite) })
}

// replaceOnce replaces the first old in b (which must be there).
func replaceOnce(t testing.TB, b []byte, old, replacement string) []byte {
	t.Helper()
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%q not in %x", old, b)
	}
	return bytes.Replace(b, []byte(old), []byte(replacement), 1)
}

// malformed derives odd and malformed requests (merged fields, unknown
// fields, bad encodings) from a valid one whose element or data point holds the string "svc".
func malformed(t testing.TB, valid []byte) map[string][]byte {
	value := valueField(valid)
	if value == nil {
		t.Fatal("seed has no value")
	}
	appendField := func(n protowire.Number, typ protowire.Type, v []byte) []byte {
		b := protowire.AppendTag(bytes.Clone(valid), n, typ)
		if typ == protowire.VarintType {
			return protowire.AppendVarint(b, 5)
		}
		return protowire.AppendBytes(b, v)
	}
	return map[string][]byte{
		"empty":               {},
		"truncated":           valid[:len(valid)-3],
		"value twice":         appendField(2, protowire.BytesType, value),
		"unknown field":       appendField(15, protowire.VarintType, nil),
		"message id as bytes": appendField(3, protowire.BytesType, []byte("x")),
		"invalid utf-8":       replaceOnce(t, valid, "svc", "\xffvc"),
		"tag of field 0":      append(bytes.Clone(valid), 0x00),
		"group wire type":     append(bytes.Clone(valid), 0x0b, 0x0c),
	}
}

// streamSeeds are the table cases as wire messages plus malformed ones.
func streamSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for i, tc := range streamCases() {
		req := proto.Clone(tc.req).(*streamv1.WriteRequest)
		req.Metadata, req.MessageId = tc.md, uint64(i+1)
		seeds[tc.name] = mustMarshal(t, req)
	}
	for name, b := range malformed(t, seeds["scalar tags"]) {
		seeds[name] = b
	}
	return seeds
}

func measureSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for i, tc := range measureCases() {
		req := proto.Clone(tc.req).(*measurev1.WriteRequest)
		req.Metadata, req.MessageId = tc.md, uint64(i+1)
		seeds[tc.name] = mustMarshal(t, req)
	}
	for name, b := range malformed(t, seeds["every field type"]) {
		seeds[name] = b
	}
	return seeds
}

// mutations are raw and simple corruptions of it: every prefix and, at
// every byte, a few replacements.
func mutations(raw []byte) [][]byte {
	var out [][]byte
	for i := range raw {
		out = append(out, raw[:i])
		for _, c := range []byte{0x00, 0x80, raw[i] ^ 0x01, raw[i] + 1} {
			m := bytes.Clone(raw)
			m[i] = c
			out = append(out, m)
		}
	}
	return append(out, raw)
}

func TestStreamWriteDifferential(t *testing.T) {
	d := newDiffer(t, true)
	mutate := map[string]bool{}
	for _, name := range corpusSeeds["FuzzStreamWriteValidation"] {
		mutate[name] = true
	}
	for name, seed := range streamSeeds(t) {
		t.Run(name, func(t *testing.T) {
			d.check(t, seed)
			if !mutate[name] || testing.Short() {
				return
			}
			for _, m := range mutations(seed) {
				d.check(t, m)
			}
		})
	}
}

func TestMeasureWriteDifferential(t *testing.T) {
	d := newDiffer(t, false)
	mutate := map[string]bool{}
	for _, name := range corpusSeeds["FuzzMeasureWriteValidation"] {
		mutate[name] = true
	}
	for name, seed := range measureSeeds(t) {
		t.Run(name, func(t *testing.T) {
			d.check(t, seed)
			if !mutate[name] || testing.Short() {
				return
			}
			for _, m := range mutations(seed) {
				d.check(t, m)
			}
		})
	}
}

func FuzzStreamWriteValidation(f *testing.F) {
	for _, seed := range streamSeeds(f) {
		f.Add(seed)
	}
	d := newDiffer(f, true)
	f.Fuzz(func(t *testing.T, raw []byte) { d.check(t, raw) })
}

func FuzzMeasureWriteValidation(f *testing.F) {
	for _, seed := range measureSeeds(f) {
		f.Add(seed)
	}
	d := newDiffer(f, false)
	f.Fuzz(func(t *testing.T, raw []byte) { d.check(t, raw) })
}

// corpusSeeds are the seeds committed under testdata/fuzz: one valid
// request of each shape and a few malformed ones.
var corpusSeeds = map[string][]string{
	"FuzzStreamWriteValidation": {
		"scalar tags", "every tag type", "nulls in non-entity tags", "trailing tags omitted",
		"entity of every type", "spec-ordered", "sub-millisecond", "null entity tag",
		"truncated", "value twice", "unknown field", "invalid utf-8",
	},
	"FuzzMeasureWriteValidation": {
		"every field type", "every tag type", "null fields", "special floats", "spec-ordered",
		"float for a binary field", "too many fields",
		"truncated", "value twice", "unknown field", "invalid utf-8",
	},
}

// TestWriteFuzzCorpus rewrites the committed seed corpus when
// BANYAND_WRITE_FUZZ_CORPUS is set; otherwise it checks the files exist.
func TestWriteFuzzCorpus(t *testing.T) {
	write := os.Getenv("BANYAND_WRITE_FUZZ_CORPUS") != ""
	all := map[string]map[string][]byte{
		"FuzzStreamWriteValidation":  streamSeeds(t),
		"FuzzMeasureWriteValidation": measureSeeds(t),
	}
	for target, names := range corpusSeeds {
		dir := filepath.Join("testdata", "fuzz", target)
		for _, name := range names {
			seed, ok := all[target][name]
			if !ok {
				t.Fatalf("%s: no seed %q", target, name)
			}
			file := filepath.Join(dir, "seed-"+fileName(name))
			if !write {
				if _, err := os.Stat(file); err != nil {
					t.Errorf("seed corpus file missing (set BANYAND_WRITE_FUZZ_CORPUS=1 to write it): %v", err)
				}
				continue
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", seed), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func fileName(name string) string {
	return string(bytes.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, []byte(name)))
}

// valueField returns field 2 (the element or data point) of a write request.
func valueField(b []byte) []byte {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			return v
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil
		}
		b = b[n:]
	}
	return nil
}

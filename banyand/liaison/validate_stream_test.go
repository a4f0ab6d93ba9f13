package liaison

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

var (
	t0   = time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC)
	ts0  = timestamppb.New(t0)
	tTag = time.Date(2020, 1, 2, 3, 4, 5, 6e6, time.UTC)
)

const (
	sInvalidArg = modelv1.Status_STATUS_INVALID_ARGUMENT
	sInvalidTS  = modelv1.Status_STATUS_INVALID_TIMESTAMP
	sSucceed    = modelv1.Status_STATUS_SUCCEED
)

func el(ts *timestamppb.Timestamp, fams ...*modelv1.TagFamilyForWrite) *streamv1.ElementValue {
	return &streamv1.ElementValue{ElementId: "e1", Timestamp: ts, TagFamilies: fams}
}

// fullBase is a "base" family value of every tag type, in schema order.
func fullBase() *modelv1.TagFamilyForWrite {
	return fam(vStr("svc"), vInt(5), vBin([]byte{0, 1, 2}), vStrs("a", "b"), vInts(1, -2), vTime(tTag))
}

// scalarBase is a "base" family with its scalar tags only (arrays and
// timestamp omitted).
func scalarBase() *modelv1.TagFamilyForWrite {
	return fam(vStr("svc"), vInt(5), vBin([]byte{0, 1, 2}))
}

func extra() *modelv1.TagFamilyForWrite { return fam(vStr("x"), vInt(9)) }

// sEntity is the entity of stream "s" (and measure "m") for base and
// extra as built above.
var sEntity = []route.EntityValue{route.StrValue("svc"), route.IntValue(9)}

// withTag returns fullBase with tag i replaced.
func withTag(i int, v *modelv1.TagValue) *modelv1.TagFamilyForWrite {
	f := fullBase()
	f.Tags[i] = v
	return f
}

type streamCase struct {
	name   string
	md     *commonv1.Metadata // sent with the message; nil: none
	req    *streamv1.WriteRequest
	status modelv1.Status
	// On success: the element forwarded (nil: req's) and the entity.
	want   *streamv1.ElementValue
	entity []route.EntityValue
}

func streamCases() []streamCase {
	md := streamMD("s")
	reqOf := func(e *streamv1.ElementValue) *streamv1.WriteRequest { return &streamv1.WriteRequest{Element: e} }
	ok := func(name string, e *streamv1.ElementValue) streamCase {
		return streamCase{name: name, md: md, req: reqOf(e), status: sSucceed, entity: sEntity}
	}
	bad := func(name string, st modelv1.Status, e *streamv1.ElementValue) streamCase {
		return streamCase{name: name, md: md, req: reqOf(e), status: st}
	}
	spec := func(name string, tags ...string) *streamv1.TagFamilySpec {
		return &streamv1.TagFamilySpec{Name: name, TagNames: tags}
	}
	specReq := func(e *streamv1.ElementValue, specs ...*streamv1.TagFamilySpec) *streamv1.WriteRequest {
		return &streamv1.WriteRequest{Element: e, TagFamilySpec: specs}
	}
	tsAt := func(sec int64, nanos int32) *timestamppb.Timestamp {
		return &timestamppb.Timestamp{Seconds: sec, Nanos: nanos}
	}
	return []streamCase{
		// Success, every tag type and shape.
		ok("scalar tags", el(ts0, scalarBase(), extra())),
		ok("every tag type", el(ts0, fullBase(), extra())),
		ok("nulls in non-entity tags", el(ts0, fam(vStr("svc"), vNull(), vNull(), vNull(), vNull(), vNull()), fam(vNull(), vInt(9)))),
		ok("unset values in non-entity tags", el(ts0, fam(vStr("svc"), &modelv1.TagValue{}, &modelv1.TagValue{}), fam(&modelv1.TagValue{}, vInt(9)))),
		ok("trailing tags omitted", el(ts0, fam(vStr("svc")), extra())),
		ok("no element id", &streamv1.ElementValue{Timestamp: ts0, TagFamilies: []*modelv1.TagFamilyForWrite{scalarBase(), extra()}}),
		ok("timestamp at the maximum", el(timestamppb.New(maxTime), scalarBase(), extra())),
		ok("timestamp at the minimum", el(timestamppb.New(minTime), scalarBase(), extra())),
		ok("timestamp before 1970", el(timestamppb.New(time.UnixMilli(-1)), scalarBase(), extra())),
		{name: "mod_revision current", md: &commonv1.Metadata{Group: testGroup, Name: "s", ModRevision: testStreamRev}, req: reqOf(el(ts0, scalarBase(), extra())), status: sSucceed, entity: sEntity},
		{
			name: "empty string and binary entity", md: streamMD("ent"),
			req:    reqOf(el(ts0, fam(vStr(""), vInt(0), vBin(nil), vStrs(), vInts(), vTime(time.Unix(0, 0))))),
			status: sSucceed,
			entity: []route.EntityValue{route.StrValue(""), route.IntValue(0), route.BytesValue(nil), route.StrArrayValue(), route.IntArrayValue(), route.TimestampValue(time.Unix(0, 0))},
		},
		{
			name: "entity of every type", md: streamMD("ent"),
			req:    reqOf(el(ts0, fullBase())),
			status: sSucceed,
			entity: []route.EntityValue{route.StrValue("svc"), route.IntValue(5), route.BytesValue([]byte{0, 1, 2}), route.StrArrayValue("a", "b"), route.IntArrayValue(1, -2), route.TimestampValue(tTag)},
		},
		{
			name: "spec-ordered", md: md,
			req:    specReq(el(ts0, fam(vInt(9), vStr("x")), fam(vInts(3), vStr("svc"))), spec("extra", "k", "e"), spec("base", "ia", "str")),
			status: sSucceed, entity: sEntity,
			want: el(ts0, fam(vStr("svc"), vNull(), vNull(), vNull(), vInts(3), vNull()), fam(vStr("x"), vInt(9))),
		},
		{
			name: "spec-ordered, schema order", md: streamMD("ent"),
			req:    specReq(el(ts0, fam(vStr("a"), vInt(1), vBin([]byte("b")), vStrs(), vInts(), vTime(tTag))), spec("f", "str", "int", "bin", "sa", "ia", "ts")),
			status: sSucceed,
			entity: []route.EntityValue{route.StrValue("a"), route.IntValue(1), route.BytesValue([]byte("b")), route.StrArrayValue(), route.IntArrayValue(), route.TimestampValue(tTag)},
		},

		// Session and schema.
		{name: "no metadata on the first message", req: reqOf(el(ts0, scalarBase(), extra())), status: modelv1.Status_STATUS_METADATA_REQUIRED},
		{name: "unknown stream", md: streamMD("nope"), req: reqOf(el(ts0, scalarBase(), extra())), status: modelv1.Status_STATUS_NOT_FOUND},
		{name: "unknown group", md: &commonv1.Metadata{Group: "other", Name: "s"}, req: reqOf(el(ts0, scalarBase(), extra())), status: modelv1.Status_STATUS_NOT_FOUND},
		{name: "a measure's name", md: streamMD("m"), req: reqOf(el(ts0, scalarBase(), extra())), status: modelv1.Status_STATUS_NOT_FOUND},
		{name: "stale mod_revision", md: &commonv1.Metadata{Group: testGroup, Name: "s", ModRevision: testStreamRev - 1}, req: reqOf(el(ts0, scalarBase(), extra())), status: modelv1.Status_STATUS_EXPIRED_SCHEMA},

		// Timestamps.
		bad("missing timestamp", sInvalidTS, el(nil, scalarBase(), extra())),
		bad("after the maximum", sInvalidTS, el(timestamppb.New(maxTime.Add(time.Millisecond)), scalarBase(), extra())),
		bad("before the minimum", sInvalidTS, el(timestamppb.New(minTime.Add(-time.Millisecond)), scalarBase(), extra())),
		bad("far future", sInvalidTS, el(tsAt(1<<40, 0), scalarBase(), extra())),
		bad("sub-millisecond", sInvalidTS, el(tsAt(ts0.GetSeconds(), 123_000_001), scalarBase(), extra())),
		bad("microseconds", sInvalidTS, el(tsAt(ts0.GetSeconds(), 1000), scalarBase(), extra())),
		// As in BanyanDB, nanos outside a second carry into the seconds.
		ok("negative nanos", el(tsAt(ts0.GetSeconds(), -1_000_000), scalarBase(), extra())),
		ok("nanos of a whole second", el(tsAt(ts0.GetSeconds(), 1_000_000_000), scalarBase(), extra())),
		bad("negative sub-millisecond nanos", sInvalidTS, el(tsAt(ts0.GetSeconds(), -1), scalarBase(), extra())),
		bad("nanos carried past the maximum", sInvalidTS, el(tsAt(maxTime.Unix(), 2_000_000_000), scalarBase(), extra())),
		// Checked before the tags.
		bad("bad timestamp and bad tags", sInvalidTS, el(nil, fam(vInt(1)))),

		// Element and entity.
		bad("missing element", sInvalidArg, nil),
		bad("no tag families", sInvalidArg, el(ts0)),
		bad("empty entity family", sInvalidArg, el(ts0, fam(), extra())),
		bad("entity family missing", sInvalidArg, el(ts0, scalarBase())),
		bad("entity tag omitted", sInvalidArg, el(ts0, scalarBase(), fam(vStr("x")))),
		bad("null entity tag", sInvalidArg, el(ts0, scalarBase(), fam(vStr("x"), vNull()))),
		bad("unset entity tag", sInvalidArg, el(ts0, fam(&modelv1.TagValue{}), extra())),

		// Wrong tag types, one per schema type.
		bad("int for a string tag", sInvalidArg, el(ts0, withTag(0, vInt(1)), extra())),
		bad("string for an int tag", sInvalidArg, el(ts0, withTag(1, vStr("1")), extra())),
		bad("string for a binary tag", sInvalidArg, el(ts0, withTag(2, vStr("x")), extra())),
		bad("int array for a string array tag", sInvalidArg, el(ts0, withTag(3, vInts(1)), extra())),
		bad("string array for an int array tag", sInvalidArg, el(ts0, withTag(4, vStrs("1")), extra())),
		bad("int for a timestamp tag", sInvalidArg, el(ts0, withTag(5, vInt(1)), extra())),
		bad("binary for a string tag", sInvalidArg, el(ts0, scalarBase(), fam(vBin([]byte("x")), vInt(9)))),
		// The same with scalar tags only (no arrays or timestamps).
		bad("scalar shape: int for a string entity tag", sInvalidArg, el(ts0, fam(vInt(1)), extra())),
		bad("scalar shape: string for an int tag", sInvalidArg, el(ts0, fam(vStr("svc"), vStr("5")), extra())),
		bad("scalar shape: string for a binary tag", sInvalidArg, el(ts0, fam(vStr("svc"), vInt(5), vStr("b")), extra())),
		bad("scalar shape: binary for an int entity tag", sInvalidArg, el(ts0, scalarBase(), fam(vStr("x"), vBin([]byte{9})))),
		bad("timestamp for an int entity tag", sInvalidArg, el(ts0, scalarBase(), fam(vStr("x"), vTime(tTag)))),

		// Counts.
		bad("too many tag families", sInvalidArg, el(ts0, scalarBase(), extra(), fam())),
		bad("too many tags", sInvalidArg, el(ts0, scalarBase(), fam(vStr("x"), vInt(9), vNull()))),
		bad("too many base tags", sInvalidArg, el(ts0, fam(vStr("svc"), vInt(5), vBin(nil), vStrs(), vInts(), vTime(tTag), vNull()), extra())),

		// Specs.
		{name: "spec names an unknown family", md: md, req: specReq(el(ts0, fam(vStr("x"))), spec("nope", "e")), status: sInvalidArg},
		{name: "spec names an unknown tag", md: md, req: specReq(el(ts0, fam(vStr("x"))), spec("extra", "nope")), status: sInvalidArg},
		{name: "more families than specs", md: md, req: specReq(el(ts0, fam(vStr("x")), fam(vStr("y"))), spec("extra", "e")), status: sInvalidArg},
		{name: "more specs than families", md: md, req: specReq(el(ts0, fam(vStr("x"))), spec("extra", "e"), spec("base", "str")), status: sInvalidArg},
		{name: "more values than spec tags", md: md, req: specReq(el(ts0, fam(vStr("x"), vInt(9)), fam(vStr("svc"))), spec("extra", "e"), spec("base", "str")), status: sInvalidArg},
		{name: "fewer values than spec tags", md: md, req: specReq(el(ts0, fam(vStr("x")), fam(vStr("svc"))), spec("extra", "e", "k"), spec("base", "str")), status: sInvalidArg},
		{name: "spec-ordered wrong type", md: md, req: specReq(el(ts0, fam(vStr("nine")), fam(vStr("svc"))), spec("extra", "k"), spec("base", "str")), status: sInvalidArg},
		{name: "spec-ordered entity left out", md: md, req: specReq(el(ts0, fam(vStr("svc"))), spec("base", "str")), status: sInvalidArg},
	}
}

func TestStreamWriteValidation(t *testing.T) {
	for _, tc := range streamCases() {
		t.Run(tc.name, func(t *testing.T) {
			req := proto.Clone(tc.req).(*streamv1.WriteRequest)
			req.Metadata = tc.md
			req.MessageId = 42
			raw := mustMarshal(t, req)

			q := &fakeQueue{}
			svc := newTestServices(t, q)
			res := runStreamWrite(svc, q, raw)
			if res.err != nil {
				t.Fatalf("Write: %v", res.err)
			}
			if len(res.resps) != 1 {
				t.Fatalf("%d answers, want 1", len(res.resps))
			}
			resp := res.resps[0]
			if resp.GetMessageId() != 42 || resp.GetStatus() != tc.status.String() {
				t.Fatalf("answer %d %s, want 42 %s", resp.GetMessageId(), resp.GetStatus(), tc.status)
			}
			if tc.md != nil && !proto.Equal(resp.GetMetadata(), tc.md) {
				t.Errorf("answer metadata %v, want %v", resp.GetMetadata(), tc.md)
			}

			l := svc.Stream.schema.snapshot().streams[nameKey{Group: tc.md.GetGroup(), Name: tc.md.GetName()}]

			if tc.status != sSucceed {
				if len(res.msgs) != 0 {
					t.Errorf("rejected write published %d messages", len(res.msgs))
				}
				if l != nil && tc.status != modelv1.Status_STATUS_EXPIRED_SCHEMA {
					// The validation itself, on the decoded request.
					if _, _, werr := refPrepareStream(l, req, nil); werr == nil || werr.status != tc.status {
						t.Errorf("refPrepareStream: %v, want %s", werr, tc.status)
					}
				}
				return
			}
			want := tc.want
			if want == nil {
				want = tc.req.GetElement()
			}
			key, err := route.AppendSeriesKey(nil, tc.md.GetName(), tc.entity)
			if err != nil {
				t.Fatal(err)
			}
			shard, _ := route.ShardID(key, testShards)
			wantWrite := &clusterv1.StreamWrite{
				Group: testGroup, Name: tc.md.GetName(), ShardId: shard, SeriesKey: key,
				Element: want, SchemaModRevision: l.modRevision, Version: testNow().UnixNano(),
			}
			if len(res.msgs) != 1 {
				t.Fatalf("%d messages published, want 1", len(res.msgs))
			}
			msg := res.msgs[0]
			if msg.Group != testGroup || msg.Shard != shard {
				t.Errorf("published to %s/%d, want %s/%d", msg.Group, msg.Shard, testGroup, shard)
			}
			var got clusterv1.StreamWrite
			if err := proto.Unmarshal(msg.Payload, &got); err != nil {
				t.Fatalf("payload does not decode: %v", err)
			}
			if !proto.Equal(&got, wantWrite) {
				t.Errorf("payload\n got %v\nwant %v", &got, wantWrite)
			}

			// The reference rules on the decoded request agree.
			gotEl, prep, werr := refPrepareStream(l, req, nil)
			if werr != nil {
				t.Fatalf("refPrepareStream: %v", werr)
			}
			if !proto.Equal(gotEl, want) || prep.shard != shard || string(prep.seriesKey) != string(key) {
				t.Errorf("refPrepareStream: %v shard %d key %x, want %v shard %d key %x", gotEl, prep.shard, prep.seriesKey, want, shard, key)
			}
		})
	}
}

// TestStreamWriteMetadataReuse checks that later messages of a stream may
// omit metadata, and that a message naming another stream switches to it.
func TestStreamWriteMetadataReuse(t *testing.T) {
	q := &fakeQueue{}
	svc := newTestServices(t, q)
	e := el(ts0, scalarBase(), extra())
	res := runStreamWrite(svc, q,
		mustMarshal(t, &streamv1.WriteRequest{Element: e, MessageId: 1}),
		mustMarshal(t, &streamv1.WriteRequest{Metadata: streamMD("s"), Element: e, MessageId: 2}),
		mustMarshal(t, &streamv1.WriteRequest{Element: e, MessageId: 3}),
		mustMarshal(t, &streamv1.WriteRequest{Metadata: streamMD("nope"), Element: e, MessageId: 4}),
		mustMarshal(t, &streamv1.WriteRequest{Element: e, MessageId: 5}),
	)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []modelv1.Status{modelv1.Status_STATUS_METADATA_REQUIRED, sSucceed, sSucceed, modelv1.Status_STATUS_NOT_FOUND, modelv1.Status_STATUS_NOT_FOUND}
	if len(res.resps) != len(want) {
		t.Fatalf("%d answers, want %d", len(res.resps), len(want))
	}
	for i, r := range res.resps {
		if r.GetMessageId() != uint64(i+1) || r.GetStatus() != want[i].String() {
			t.Errorf("answer %d: %d %s, want %d %s", i, r.GetMessageId(), r.GetStatus(), i+1, want[i])
		}
	}
	if !proto.Equal(res.resps[2].GetMetadata(), streamMD("s")) {
		t.Errorf("answer 3 metadata %v, want the stream's", res.resps[2].GetMetadata())
	}
	if len(res.msgs) != 2 {
		t.Errorf("%d messages published, want 2", len(res.msgs))
	}
}

// TestWriteKeepsNoRequestBytes: the request buffers grpc lends the codec
// go back once each message is handled (the fake stream scribbles over
// them then), so what outlives a message must be copies: the metadata a
// stream's later messages omit and echo, and the published writes.
func TestWriteKeepsNoRequestBytes(t *testing.T) {
	q := &fakeQueue{}
	svc := newTestServices(t, q)
	// Over grpc's pooling threshold (1 KiB): smaller buffers are never reused.
	e := el(ts0, fam(vStr("svc"), vInt(5), vBin(bytes.Repeat([]byte{7}, 2048))), extra())
	first := mustMarshal(t, &streamv1.WriteRequest{Metadata: streamMD("s"), Element: e, MessageId: 1})
	res := runStreamWrite(svc, q, first,
		mustMarshal(t, &streamv1.WriteRequest{Element: e, MessageId: 2}),
		mustMarshal(t, &streamv1.WriteRequest{Element: e, MessageId: 3}),
	)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.resps) != 3 || len(res.msgs) != 3 {
		t.Fatalf("%d answers and %d messages published, want 3 and 3", len(res.resps), len(res.msgs))
	}
	for i, r := range res.resps {
		if r.GetStatus() != sSucceed.String() || !proto.Equal(r.GetMetadata(), streamMD("s")) {
			t.Errorf("answer %d: %s with metadata %v, want %s with the stream's", i+1, r.GetStatus(), r.GetMetadata(), sSucceed)
		}
	}
	// The same element each time: the same write published each time,
	// but for its version, which goes up with each.
	want := res.msgs[0].Payload
	var firstWrite *clusterv1.StreamWrite
	prev := int64(0)
	for i, m := range res.msgs {
		w := &clusterv1.StreamWrite{}
		if err := proto.Unmarshal(m.Payload, w); err != nil {
			t.Fatal(err)
		}
		if w.GetVersion() <= prev {
			t.Errorf("published write %d has version %d, not above the one before (%d)", i+1, w.GetVersion(), prev)
		}
		prev = w.GetVersion()
		w.Version = 0
		if firstWrite == nil {
			firstWrite = w
		}
		if !proto.Equal(w, firstWrite) || bytes.Contains(m.Payload, []byte{0xEE, 0xEE, 0xEE, 0xEE}) {
			t.Errorf("published write %d is %x, want %x but for its version", i+1, m.Payload, want)
		}
	}
	if !bytes.Contains(want, bytes.Repeat([]byte{7}, 2048)) {
		t.Errorf("published write %x does not hold the element's tags", want)
	}
}

package liaison

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/pkg/route"
)

func dp(ts *timestamppb.Timestamp, fields []*modelv1.FieldValue, fams ...*modelv1.TagFamilyForWrite) *measurev1.DataPointValue {
	return &measurev1.DataPointValue{Timestamp: ts, TagFamilies: fams, Fields: fields, Version: 3}
}

func fields(f ...*modelv1.FieldValue) []*modelv1.FieldValue { return f }

// allFields is one value of every field type, in schema order.
func allFields() []*modelv1.FieldValue {
	return fields(fInt(7), fFloat(1.5), fStr("s"), fBin([]byte{9}))
}

func withField(i int, v *modelv1.FieldValue) []*modelv1.FieldValue {
	f := allFields()
	f[i] = v
	return f
}

type measureCase struct {
	name   string
	md     *commonv1.Metadata
	req    *measurev1.WriteRequest
	status modelv1.Status
	want   *measurev1.DataPointValue // nil: req's
}

func measureCases() []measureCase {
	md := streamMD("m")
	reqOf := func(d *measurev1.DataPointValue) *measurev1.WriteRequest {
		return &measurev1.WriteRequest{DataPoint: d}
	}
	ok := func(name string, d *measurev1.DataPointValue) measureCase {
		return measureCase{name: name, md: md, req: reqOf(d), status: sSucceed}
	}
	bad := func(name string, st modelv1.Status, d *measurev1.DataPointValue) measureCase {
		return measureCase{name: name, md: md, req: reqOf(d), status: st}
	}
	spec := func(tags []*measurev1.TagFamilySpec, fieldNames ...string) *measurev1.DataPointSpec {
		return &measurev1.DataPointSpec{TagFamilySpec: tags, FieldNames: fieldNames}
	}
	fspec := func(name string, tags ...string) *measurev1.TagFamilySpec {
		return &measurev1.TagFamilySpec{Name: name, TagNames: tags}
	}
	specReq := func(d *measurev1.DataPointValue, s *measurev1.DataPointSpec) *measurev1.WriteRequest {
		return &measurev1.WriteRequest{DataPoint: d, DataPointSpec: s}
	}
	bothFams := []*measurev1.TagFamilySpec{fspec("extra", "k"), fspec("base", "str")}
	bothVals := []*modelv1.TagFamilyForWrite{fam(vInt(9)), fam(vStr("svc"))}
	normTags := []*modelv1.TagFamilyForWrite{fam(vStr("svc"), vNull(), vNull(), vNull(), vNull(), vNull()), fam(vNull(), vInt(9))}
	return []measureCase{
		// Success.
		ok("every field type", dp(ts0, allFields(), scalarBase(), extra())),
		ok("every tag type", dp(ts0, allFields(), fullBase(), extra())),
		ok("null fields", dp(ts0, fields(fNull(), fNull(), &modelv1.FieldValue{}, fNull()), scalarBase(), extra())),
		ok("fewer fields", dp(ts0, fields(fInt(1)), scalarBase(), extra())),
		ok("no fields", dp(ts0, nil, scalarBase(), extra())),
		ok("nulls in non-entity tags", dp(ts0, allFields(), fam(vStr("svc"), vNull(), &modelv1.TagValue{}), fam(vNull(), vInt(9)))),
		ok("trailing tags omitted", dp(ts0, allFields(), fam(vStr("svc")), extra())),
		ok("special floats", dp(ts0, fields(fNull(), fFloat(math.Inf(-1))), scalarBase(), extra())),
		ok("NaN", dp(ts0, fields(fNull(), fFloat(math.NaN())), scalarBase(), extra())),
		ok("no version", &measurev1.DataPointValue{Timestamp: ts0, TagFamilies: []*modelv1.TagFamilyForWrite{scalarBase(), extra()}}),
		ok("timestamp at the maximum", dp(timestamppb.New(maxTime), nil, scalarBase(), extra())),
		{name: "mod_revision current", md: &commonv1.Metadata{Group: testGroup, Name: "m", ModRevision: testMeasRev}, req: reqOf(dp(ts0, nil, scalarBase(), extra())), status: sSucceed},
		{
			name: "spec-ordered", md: md, status: sSucceed,
			req:  specReq(dp(ts0, fields(fFloat(2.5), fInt(1)), bothVals...), spec(bothFams, "ff", "fi")),
			want: dp(ts0, fields(fInt(1), fFloat(2.5), fNull(), fNull()), normTags...),
		},
		{
			name: "spec-ordered, no fields", md: md, status: sSucceed,
			req:  specReq(dp(ts0, nil, bothVals...), spec(bothFams)),
			want: dp(ts0, fields(fNull(), fNull(), fNull(), fNull()), normTags...),
		},

		// Session and schema.
		{name: "no metadata on the first message", req: reqOf(dp(ts0, nil, scalarBase(), extra())), status: modelv1.Status_STATUS_METADATA_REQUIRED},
		{name: "unknown measure", md: streamMD("nope"), req: reqOf(dp(ts0, nil, scalarBase(), extra())), status: modelv1.Status_STATUS_NOT_FOUND},
		{name: "a stream's name", md: streamMD("s"), req: reqOf(dp(ts0, nil, scalarBase(), extra())), status: modelv1.Status_STATUS_NOT_FOUND},
		{name: "newer mod_revision", md: &commonv1.Metadata{Group: testGroup, Name: "m", ModRevision: testMeasRev + 1}, req: reqOf(dp(ts0, nil, scalarBase(), extra())), status: modelv1.Status_STATUS_EXPIRED_SCHEMA},

		// Timestamps.
		bad("missing timestamp", sInvalidTS, dp(nil, nil, scalarBase(), extra())),
		bad("after the maximum", sInvalidTS, dp(timestamppb.New(maxTime.Add(time.Millisecond)), nil, scalarBase(), extra())),
		bad("before the minimum", sInvalidTS, dp(timestamppb.New(minTime.Add(-time.Millisecond)), nil, scalarBase(), extra())),
		bad("sub-millisecond", sInvalidTS, dp(&timestamppb.Timestamp{Seconds: 1, Nanos: 1}, nil, scalarBase(), extra())),
		bad("invalid nanos", sInvalidTS, dp(&timestamppb.Timestamp{Seconds: 1, Nanos: -1}, nil, scalarBase(), extra())),
		ok("nanos of a whole second", dp(&timestamppb.Timestamp{Seconds: 1, Nanos: 1e9}, nil, scalarBase(), extra())),

		// Data point, tags and entity.
		bad("missing data point", sInvalidArg, nil),
		bad("entity family missing", sInvalidArg, dp(ts0, nil, scalarBase())),
		bad("null entity tag", sInvalidArg, dp(ts0, nil, fam(vNull()), extra())),
		bad("wrong tag type", sInvalidArg, dp(ts0, nil, withTag(3, vStr("x")), extra())),
		bad("timestamp for an int tag", sInvalidArg, dp(ts0, nil, withTag(1, vTime(tTag)), extra())),
		bad("scalar shape: string for an int tag", sInvalidArg, dp(ts0, allFields(), fam(vStr("svc"), vStr("5")), extra())),
		bad("scalar shape: int for a string entity tag", sInvalidArg, dp(ts0, allFields(), fam(vInt(1)), extra())),
		bad("too many tag families", sInvalidArg, dp(ts0, nil, scalarBase(), extra(), fam())),
		bad("too many tags", sInvalidArg, dp(ts0, nil, scalarBase(), fam(vStr("x"), vInt(9), vInt(10)))),

		// Fields.
		bad("string for an int field", sInvalidArg, dp(ts0, withField(0, fStr("1")), scalarBase(), extra())),
		bad("int for a float field", sInvalidArg, dp(ts0, withField(1, fInt(1)), scalarBase(), extra())),
		bad("binary for a string field", sInvalidArg, dp(ts0, withField(2, fBin([]byte("s"))), scalarBase(), extra())),
		bad("float for a binary field", sInvalidArg, dp(ts0, withField(3, fFloat(1)), scalarBase(), extra())),
		bad("too many fields", sInvalidArg, dp(ts0, append(allFields(), fNull()), scalarBase(), extra())),
		// Fields are checked before tags: same status either way.
		bad("bad field and bad tag", sInvalidArg, dp(ts0, withField(0, fStr("1")), fam(vInt(1)))),

		// Specs.
		{name: "spec names an unknown family", md: md, req: specReq(dp(ts0, nil, fam(vInt(9))), spec([]*measurev1.TagFamilySpec{fspec("nope", "k")})), status: sInvalidArg},
		{name: "spec names an unknown tag", md: md, req: specReq(dp(ts0, nil, fam(vInt(9))), spec([]*measurev1.TagFamilySpec{fspec("extra", "nope")})), status: sInvalidArg},
		{name: "spec names an unknown field", md: md, req: specReq(dp(ts0, fields(fInt(1)), bothVals...), spec(bothFams, "nope")), status: sInvalidArg},
		{name: "more fields than spec names", md: md, req: specReq(dp(ts0, fields(fInt(1), fInt(2)), bothVals...), spec(bothFams, "fi")), status: sInvalidArg},
		{name: "fewer fields than spec names", md: md, req: specReq(dp(ts0, fields(fInt(1)), bothVals...), spec(bothFams, "fi", "ff")), status: sInvalidArg},
		{name: "more families than specs", md: md, req: specReq(dp(ts0, nil, bothVals...), spec(bothFams[:1])), status: sInvalidArg},
		{name: "fewer values than spec tags", md: md, req: specReq(dp(ts0, nil, bothVals...), spec([]*measurev1.TagFamilySpec{fspec("extra", "k", "e"), fspec("base", "str")})), status: sInvalidArg},
		{name: "spec-ordered wrong field type", md: md, req: specReq(dp(ts0, fields(fStr("x")), bothVals...), spec(bothFams, "ff")), status: sInvalidArg},
		{name: "spec of 100,000 tag names", md: md, req: specReq(dp(ts0, nil, bothVals...), spec([]*measurev1.TagFamilySpec{fspec("extra", manyNames("k", 100_000)...)})), status: sInvalidArg},
		{name: "spec of 10,000 families", md: md, req: specReq(dp(ts0, nil, bothVals...), spec(manySpecs(10_000))), status: sInvalidArg},
	}
}

// manyNames is n copies of name: an oversized spec.
func manyNames(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name
	}
	return out
}

func manySpecs(n int) []*measurev1.TagFamilySpec {
	out := make([]*measurev1.TagFamilySpec, n)
	for i := range out {
		out[i] = &measurev1.TagFamilySpec{Name: "extra", TagNames: []string{"k"}}
	}
	return out
}

func TestMeasureWriteValidation(t *testing.T) {
	for _, tc := range measureCases() {
		t.Run(tc.name, func(t *testing.T) {
			req := proto.Clone(tc.req).(*measurev1.WriteRequest)
			req.Metadata = tc.md
			req.MessageId = 42
			raw := mustMarshal(t, req)

			q := &fakeQueue{}
			svc := newTestServices(t, q)
			res := runMeasureWrite(svc, q, raw)
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

			l := svc.Measure.schema.snapshot().measures[nameKey{Group: tc.md.GetGroup(), Name: tc.md.GetName()}]

			if tc.status != sSucceed {
				if len(res.msgs) != 0 {
					t.Errorf("rejected write published %d messages", len(res.msgs))
				}
				if l != nil && tc.status != modelv1.Status_STATUS_EXPIRED_SCHEMA {
					if _, _, werr := refPrepareMeasure(l, req, nil); werr == nil || werr.status != tc.status {
						t.Errorf("refPrepareMeasure: %v, want %s", werr, tc.status)
					}
				}
				return
			}
			want := tc.want
			if want == nil {
				want = tc.req.GetDataPoint()
			}
			want = refVersioned(want, req.GetMessageId())
			key, err := route.AppendSeriesKey(nil, "m", sEntity)
			if err != nil {
				t.Fatal(err)
			}
			shard, _ := route.ShardID(key, testShards)
			wantWrite := &clusterv1.MeasureWrite{
				Group: testGroup, Name: "m", ShardId: shard, SeriesKey: key,
				DataPoint: want, SchemaModRevision: testMeasRev,
			}
			if len(res.msgs) != 1 {
				t.Fatalf("%d messages published, want 1", len(res.msgs))
			}
			msg := res.msgs[0]
			if msg.Group != testGroup || msg.Shard != shard {
				t.Errorf("published to %s/%d, want %s/%d", msg.Group, msg.Shard, testGroup, shard)
			}
			var got clusterv1.MeasureWrite
			if err := proto.Unmarshal(msg.Payload, &got); err != nil {
				t.Fatalf("payload does not decode: %v", err)
			}
			if !proto.Equal(&got, wantWrite) {
				t.Errorf("payload\n got %v\nwant %v", &got, wantWrite)
			}

			gotDP, prep, werr := refPrepareMeasure(l, req, nil)
			if werr != nil {
				t.Fatalf("refPrepareMeasure: %v", werr)
			}
			if !proto.Equal(refVersioned(gotDP, req.GetMessageId()), want) || prep.shard != shard || string(prep.seriesKey) != string(key) {
				t.Errorf("refPrepareMeasure: %v shard %d key %x, want %v shard %d key %x", gotDP, prep.shard, prep.seriesKey, want, shard, key)
			}
		})
	}
}

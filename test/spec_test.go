package test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// BanyanDB v0.10 clients may name the tags they send (tag_family_spec)
// instead of following the schema's order; the liaison puts the values in
// schema order and leaves unnamed tags null.
func TestStandaloneSpecOrderedStreamWrite(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createStreamSchema(t, conn, 2)
	el := testElement(1, 3)
	searchable := el.GetTagFamilies()[0].GetTags()
	payload := el.GetTagFamilies()[1].GetTags()[0]
	req := &streamv1.WriteRequest{
		Metadata:  &commonv1.Metadata{Group: streamGroup, Name: streamName},
		MessageId: 1,
		Element: &streamv1.ElementValue{
			ElementId: el.GetElementId(),
			Timestamp: el.GetTimestamp(),
			TagFamilies: []*modelv1.TagFamilyForWrite{
				{Tags: []*modelv1.TagValue{payload}},
				{Tags: []*modelv1.TagValue{searchable[1], searchable[0]}},
			},
		},
		TagFamilySpec: []*streamv1.TagFamilySpec{
			{Name: "data", TagNames: []string{"payload"}},
			{Name: "searchable", TagNames: []string{"instance", "service"}},
		},
	}
	bad := proto.CloneOf(req)
	bad.MessageId = 2
	bad.TagFamilySpec[1].TagNames[0] = "no_such_tag"
	st := writeStream(t, conn, []*streamv1.WriteRequest{req, bad})
	if st[1] != modelv1.Status_STATUS_SUCCEED.String() || st[2] != modelv1.Status_STATUS_INVALID_ARGUMENT.String() {
		t.Fatalf("statuses %v: want the spec-ordered write to succeed and the unknown tag to be refused", st)
	}
	got := queryAllStream(t, conn, 10)
	if len(got) != 1 {
		t.Fatalf("%d elements, want 1", len(got))
	}
	tags := got[0].GetTagFamilies()[0].GetTags()
	want := []*modelv1.TagValue{searchable[0], searchable[1], nil, nil, nil}
	for i, tag := range tags {
		if want[i] == nil {
			if _, isNull := tag.GetValue().GetValue().(*modelv1.TagValue_Null); !isNull && tag.GetValue().GetValue() != nil {
				t.Errorf("tag %s: got %v, want null (not in the spec)", tag.GetKey(), tag.GetValue())
			}
			continue
		}
		if !proto.Equal(tag.GetValue(), want[i]) {
			t.Errorf("tag %s: got %v, want %v", tag.GetKey(), tag.GetValue(), want[i])
		}
	}
	if !proto.Equal(got[0].GetTagFamilies()[1].GetTags()[0].GetValue(), payload) {
		t.Errorf("payload: got %v", got[0].GetTagFamilies()[1].GetTags()[0].GetValue())
	}
}

func TestStandaloneSpecOrderedMeasureWrite(t *testing.T) {
	conn, _ := startStandalone(t, t.TempDir())
	createMeasureSchema(t, conn, 2)
	dp := testDataPoint(7, 3)
	ws, err := measurev1.NewMeasureServiceClient(conn).Write(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Send(&measurev1.WriteRequest{
		Metadata:  &commonv1.Metadata{Group: measureGroup, Name: measureName},
		MessageId: 1,
		DataPoint: &measurev1.DataPointValue{
			Timestamp:   dp.GetTimestamp(),
			TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{dp.GetTagFamilies()[0].GetTags()[0]}}},
			Fields:      []*modelv1.FieldValue{dp.GetFields()[1], dp.GetFields()[0]},
		},
		DataPointSpec: &measurev1.DataPointSpec{
			TagFamilySpec: []*measurev1.TagFamilySpec{{Name: "default", TagNames: []string{"service"}}},
			FieldNames:    []string{"avg", "count"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	_ = ws.CloseSend()
	resp, err := ws.Recv()
	if err != nil || resp.GetStatus() != modelv1.Status_STATUS_SUCCEED.String() {
		t.Fatalf("write: %v %v", resp, err)
	}
	q, err := measurev1.NewMeasureServiceClient(conn).Query(ctxT(t), &measurev1.QueryRequest{
		Groups: []string{measureGroup}, Name: measureName,
		TimeRange:       &modelv1.TimeRange{Begin: dp.GetTimestamp(), End: timestampAfter(dp.GetTimestamp().AsTime())},
		FieldProjection: &measurev1.QueryRequest_FieldProjection{Names: []string{"count", "avg"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.GetDataPoints()) != 1 {
		t.Fatalf("%d points, want 1", len(q.GetDataPoints()))
	}
	f := q.GetDataPoints()[0].GetFields()
	if !proto.Equal(f[0].GetValue(), dp.GetFields()[0]) || !proto.Equal(f[1].GetValue(), dp.GetFields()[1]) {
		t.Fatalf("fields %v, want count and avg in schema order", f)
	}
}

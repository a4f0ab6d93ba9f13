package liaison

import (
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// TestStreamSpecStaysInForce writes as SkyWalking OAP does: the first
// message of a (group, name) carries metadata and a tag family spec in
// its own order, the next ones values only. Every values-only message is
// placed by the spec in force, so each value lands in its own tag; one
// that does not fit the spec is refused alone; a message with a new spec
// replaces it.
func TestStreamSpecStaysInForce(t *testing.T) {
	q := &fakeQueue{}
	svc := newTestServices(t, q)
	specs := []*streamv1.TagFamilySpec{tfSpec("extra", "k", "e"), tfSpec("base", "str")}
	values := func(k int64, e, str string) *streamv1.ElementValue {
		return el(ts0, fam(vInt(k), vStr(e)), fam(vStr(str)))
	}
	res := runStreamWrite(svc, q,
		mustMarshal(t, &streamv1.WriteRequest{Metadata: streamMD("s"), MessageId: 1, TagFamilySpec: specs, Element: values(1, "e1", "svc-1")}),
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 2, Element: values(2, "e2", "svc-2")}),
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 3, Element: el(ts0, fam(vInt(3)))}), // one family for a spec of two
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 4, Element: values(4, "e4", "svc-4")}),
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 5, TagFamilySpec: []*streamv1.TagFamilySpec{tfSpec("base", "str"), tfSpec("extra", "e", "k")},
			Element: el(ts0, fam(vStr("svc-5")), fam(vStr("e5"), vInt(5)))}),
		mustMarshal(t, &streamv1.WriteRequest{MessageId: 6, Element: el(ts0, fam(vStr("svc-6")), fam(vStr("e6"), vInt(6)))}),
	)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := map[uint64]modelv1.Status{1: sSucceed, 2: sSucceed, 3: sInvalidArg, 4: sSucceed, 5: sSucceed, 6: sSucceed}
	for _, r := range res.resps {
		if r.GetStatus() != want[r.GetMessageId()].String() {
			t.Errorf("message %d: %s, want %s", r.GetMessageId(), r.GetStatus(), want[r.GetMessageId()])
		}
	}
	if len(res.msgs) != 5 {
		t.Fatalf("%d writes published, want 5", len(res.msgs))
	}
	for i, n := range []int64{1, 2, 4, 5, 6} {
		var w clusterv1.StreamWrite
		if err := proto.Unmarshal(res.msgs[i].Payload, &w); err != nil {
			t.Fatal(err)
		}
		fams := w.GetElement().GetTagFamilies()
		str, e, k := fams[0].GetTags()[0].GetStr().GetValue(), fams[1].GetTags()[0].GetStr().GetValue(), fams[1].GetTags()[1].GetInt().GetValue()
		if str != "svc-"+itoa(n) || e != "e"+itoa(n) || k != n {
			t.Errorf("write %d stored str=%q e=%q k=%d, want svc-%d e%d %d", n, str, e, k, n, n, n)
		}
		for ti, tag := range fams[0].GetTags()[1:] {
			if tag.GetNull() != 0 || tag.GetValue() == nil {
				t.Errorf("write %d: base tag %d is %v, want null (the spec leaves it out)", n, ti+1, tag)
			}
		}
	}
}

// TestMeasureSpecStaysInForce is the same for data points: tags and
// fields in the spec's order on the first message, values only after.
func TestMeasureSpecStaysInForce(t *testing.T) {
	q := &fakeQueue{}
	svc := newTestServices(t, q)
	dpSpec := &measurev1.DataPointSpec{
		TagFamilySpec: []*measurev1.TagFamilySpec{{Name: "extra", TagNames: []string{"k", "e"}}, {Name: "base", TagNames: []string{"str"}}},
		FieldNames:    []string{"fs", "fi"},
	}
	point := func(n int64) *measurev1.DataPointValue {
		return dp(ts0, fields(fStr("s"+itoa(n)), fInt(n)), fam(vInt(n), vStr("e"+itoa(n))), fam(vStr("svc")))
	}
	res := runMeasureWrite(svc, q,
		mustMarshal(t, &measurev1.WriteRequest{Metadata: streamMD("m"), MessageId: 1, DataPointSpec: dpSpec, DataPoint: point(1)}),
		mustMarshal(t, &measurev1.WriteRequest{MessageId: 2, DataPoint: point(2)}),
		mustMarshal(t, &measurev1.WriteRequest{MessageId: 3, DataPoint: dp(ts0, fields(fInt(3)), fam(vInt(3), vStr("e3")), fam(vStr("svc")))}), // one field for two
		mustMarshal(t, &measurev1.WriteRequest{MessageId: 4, DataPoint: point(4)}),
	)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := map[uint64]modelv1.Status{1: sSucceed, 2: sSucceed, 3: sInvalidArg, 4: sSucceed}
	for _, r := range res.resps {
		if r.GetStatus() != want[r.GetMessageId()].String() {
			t.Errorf("message %d: %s, want %s", r.GetMessageId(), r.GetStatus(), want[r.GetMessageId()])
		}
	}
	if len(res.msgs) != 3 {
		t.Fatalf("%d writes published, want 3", len(res.msgs))
	}
	for i, n := range []int64{1, 2, 4} {
		var w clusterv1.MeasureWrite
		if err := proto.Unmarshal(res.msgs[i].Payload, &w); err != nil {
			t.Fatal(err)
		}
		d := w.GetDataPoint()
		extra, f := d.GetTagFamilies()[1].GetTags(), d.GetFields()
		if extra[0].GetStr().GetValue() != "e"+itoa(n) || extra[1].GetInt().GetValue() != n ||
			f[0].GetInt().GetValue() != n || f[2].GetStr().GetValue() != "s"+itoa(n) || f[1].GetNull() != 0 || f[1].GetValue() == nil {
			t.Errorf("write %d stored tags %v fields %v", n, extra, f)
		}
	}
}

func tfSpec(name string, tags ...string) *streamv1.TagFamilySpec {
	return &streamv1.TagFamilySpec{Name: name, TagNames: tags}
}

package codec

import (
	"testing"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	"github.com/banyand-io/banyand/pkg/registry"
)

func TestPathRoundTrip(t *testing.T) {
	for _, k := range []registry.Key{registry.GroupKey("g"), registry.StreamKey("g", "s"), registry.MeasureKey("g-1", "m.x"),
		{Kind: registry.KindIndexRuleBinding, Group: "g", Name: "b"}, {Kind: registry.KindTopNAggregation, Group: "g", Name: "t"}} {
		got, err := Parse(Path(k))
		if err != nil || got != k {
			t.Errorf("Parse(Path(%v)) = %v, %v", k, got, err)
		}
	}
	for _, bad := range []string{"", "group", "group/", "group/a/b", "stream/g", "stream/g/", "stream//s", "stream/g/s/x", "widget/g/s"} {
		if k, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want error", bad, k)
		}
	}
}

func TestDecode(t *testing.T) {
	g := &commonv1.Group{Metadata: &commonv1.Metadata{Name: "g"}, Catalog: commonv1.Catalog_CATALOG_STREAM,
		ResourceOpts: &commonv1.ResourceOpts{ShardNum: 1}}
	data, _ := proto.Marshal(g)
	if _, err := Decode(registry.GroupKey("g"), data); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(registry.GroupKey("other"), data); err == nil {
		t.Error("value under another key accepted")
	}
	if _, err := Decode(registry.GroupKey("g"), []byte("\xff\xff")); err == nil {
		t.Error("garbage accepted")
	}
	if _, err := Decode(registry.GroupKey("g"), nil); err == nil {
		t.Error("empty (invalid) group accepted")
	}
}

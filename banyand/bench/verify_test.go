package bench

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

// TestSeqOfAnswered: an answered element is this run's seq only when its
// id is BanyanDB's form of that seq's written id.
func TestSeqOfAnswered(t *testing.T) {
	m := &messages{md: &commonv1.Metadata{Group: "g", Name: "s"}, entities: 10, baseMillis: 1_000_000, stepMillis: 1, runID: "bfeed"}
	const seq, e = 123, 3 // seq 123 is entity 3 at base + 12 ms
	el := func(id string, ms int64) *streamv1.Element {
		return &streamv1.Element{ElementId: id, Timestamp: timestamppb.New(time.UnixMilli(ms))}
	}
	answered := elementid.Of("g", "s", m.elementID(seq))
	for _, tc := range []struct {
		name string
		el   *streamv1.Element
		want int64
	}{
		{"answered form", el(answered, m.millis(seq)), seq},
		{"id as written", el(m.elementID(seq), m.millis(seq)), -1},
		{"another seq's id", el(elementid.Of("g", "s", m.elementID(seq+10)), m.millis(seq)), -1},
		{"another stream's hash", el(elementid.Of("g", "other", m.elementID(seq)), m.millis(seq)), -1},
		{"another time", el(answered, m.millis(seq)+1), -1},
		{"before the run", el(answered, m.baseMillis-1), -1},
	} {
		if got := m.seqOfAnswered(e, tc.el); got != tc.want {
			t.Errorf("%s: seq %d, want %d", tc.name, got, tc.want)
		}
	}
}

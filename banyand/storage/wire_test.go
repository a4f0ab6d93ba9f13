package storage

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// checkParse asserts the wire parser agrees with proto.Unmarshal on m:
// both accept or both reject, and when both accept they read the same values.
func checkParse(t *testing.T, m []byte, stream bool) {
	t.Helper()
	ww, ok, err := parseWrite(m, stream, nil)
	if err == nil && !ok {
		return // left to proto.Unmarshal
	}
	var (
		perr            error
		group, name     string
		key             []byte
		value           proto.Message
		hasTS           bool
		secs            int64
		nanos           int32
		elementID       string
		version         int64
		decodedStoredAs proto.Message
	)
	if stream {
		var sw clusterv1.StreamWrite
		perr = proto.Unmarshal(m, &sw)
		group, name, key = sw.GetGroup(), sw.GetName(), sw.GetSeriesKey()
		if e := sw.GetElement(); e != nil {
			value, elementID = e, e.GetElementId()
			hasTS, secs, nanos = e.GetTimestamp() != nil, e.GetTimestamp().GetSeconds(), e.GetTimestamp().GetNanos()
		}
		decodedStoredAs = &streamv1.ElementValue{}
	} else {
		var mw clusterv1.MeasureWrite
		perr = proto.Unmarshal(m, &mw)
		group, name, key = mw.GetGroup(), mw.GetName(), mw.GetSeriesKey()
		if dp := mw.GetDataPoint(); dp != nil {
			value, version = dp, dp.GetVersion()
			hasTS, secs, nanos = dp.GetTimestamp() != nil, dp.GetTimestamp().GetSeconds(), dp.GetTimestamp().GetNanos()
		}
		decodedStoredAs = &measurev1.DataPointValue{}
	}
	if (err == nil) != (perr == nil) {
		t.Fatalf("input %x: wire parser error %v, proto.Unmarshal error %v", m, err, perr)
	}
	if err != nil {
		return
	}
	if ww.group != group || ww.name != name || !bytes.Equal(ww.seriesKey, key) || ww.elementID != elementID ||
		ww.hasTS != hasTS || ww.seconds != secs || ww.nanos != nanos || ww.version != version {
		t.Fatalf("input %x: wire parser read %+v", m, ww)
	}
	if (ww.value == nil) != (value == nil) {
		t.Fatalf("input %x: value presence differs", m)
	}
	if value != nil {
		if err := proto.Unmarshal(ww.value, decodedStoredAs); err != nil || !proto.Equal(decodedStoredAs, value) {
			t.Fatalf("input %x: stored bytes decode to %v (%v), want %v", m, decodedStoredAs, err, value)
		}
	}
}

func seeds(t testing.TB) (streams, measures [][]byte) {
	for i, e := range []elem{
		{service: "svc", instance: "i-1", id: "e1", ts: base, code: 3},
		{service: "", instance: "x", id: "", ts: time.Unix(-5, 7), code: -1},
	} {
		streams = append(streams, e.msg(t))
		measures = append(measures, point{service: e.service, ts: e.ts, total: int64(i), version: int64(-i)}.msg(t))
	}
	return streams, measures
}

func TestWireParserMatchesProto(t *testing.T) {
	streams, measures := seeds(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		msgs   [][]byte
		stream bool
	}{{streams, true}, {measures, false}} {
		for _, m := range tc.msgs {
			checkParse(t, m, tc.stream)
			for range 5000 {
				checkParse(t, mutate(rng, m), tc.stream)
			}
		}
	}
	// Field 5 twice: protobuf merges the two; the parser defers to it.
	twice := append(bytes.Clone(streams[0]), streams[1]...)
	if _, ok, err := parseWrite(twice, true, nil); ok || err != nil {
		t.Errorf("repeated element: ok=%v err=%v, want a fallback", ok, err)
	}
	// The second element's empty id is not on the wire, so the first's stays;
	// its timestamp replaces the first's.
	if w, err := decodeStreamWrite(twice, nil); err != nil || w.ElementID != "e1" || w.Timestamp != time.Unix(-5, 7).UnixNano() {
		t.Errorf("merged element: %+v %v", w, err)
	}
}

// mutate returns a copy of m with a few random byte edits.
func mutate(rng *rand.Rand, m []byte) []byte {
	out := bytes.Clone(m)
	for range 1 + rng.IntN(3) {
		if len(out) == 0 {
			return out
		}
		i := rng.IntN(len(out))
		switch rng.IntN(4) {
		case 0:
			out[i] ^= 1 << rng.IntN(8)
		case 1:
			out[i] = byte(rng.IntN(256))
		case 2:
			out = out[:i]
		default:
			out = append(out[:i], append([]byte{byte(rng.IntN(256))}, out[i:]...)...)
		}
	}
	return out
}

func FuzzParseStreamWrite(f *testing.F) {
	streams, _ := seeds(f)
	for _, m := range streams {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m []byte) { checkParse(t, m, true) })
}

func FuzzParseMeasureWrite(f *testing.F) {
	_, measures := seeds(f)
	for _, m := range measures {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m []byte) { checkParse(t, m, false) })
}

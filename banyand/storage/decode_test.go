package storage

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// The parser itself is held to proto.Unmarshal in pkg/wire; these check
// what the storage makes of its result.

// TestDecodeMergedWrite: a write whose element occurs twice is stored as
// protobuf merges it.
func TestDecodeMergedWrite(t *testing.T) {
	streams, _ := seeds(t)
	twice := append(bytes.Clone(streams[0]), streams[1]...)
	// The second element's empty id is not on the wire, so the first's stays;
	// its timestamp replaces the first's.
	w, err := newDecoder(tsdb.KindStream, false).decode(twice)
	if err != nil || w.ElementID != "e1" || w.Timestamp != time.Unix(-5, 7).UnixNano() {
		t.Errorf("merged element: %+v %v", w, err)
	}
}

// TestDecodeRejects: undecodable bytes, a write without its value and
// an unstorable timestamp fail as invalid messages.
func TestDecodeRejects(t *testing.T) {
	streams, measures := seeds(t)
	for name, tc := range map[string]struct {
		kind tsdb.Kind
		m    []byte
	}{
		"truncated stream write":  {tsdb.KindStream, streams[0][:len(streams[0])-1]},
		"truncated measure write": {tsdb.KindMeasure, measures[0][:len(measures[0])-1]},
		"no element":              {tsdb.KindStream, []byte{0x0a, 0x01, 'g'}},
		"no timestamp":            {tsdb.KindStream, []byte{0x2a, 0x02, 0x0a, 0x00}},
	} {
		for _, local := range []bool{false, true} {
			if _, err := newDecoder(tc.kind, local).decode(tc.m); !errors.Is(err, queue.ErrInvalidMessage) {
				t.Errorf("%s (local %v): %v, want an invalid message", name, local, err)
			}
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

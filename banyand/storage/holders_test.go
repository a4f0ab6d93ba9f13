package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
)

// fakeHolders is a HolderRecorder that remembers its calls and may fail.
type fakeHolders struct {
	mu    sync.Mutex
	calls []holderPair
	err   error
}

func (f *fakeHolders) Record(_ context.Context, group string, shard uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, holderPair{group, shard})
	return f.err
}

// TestWritesRecordTheirHolderFirst: a batch records each distinct (group,
// shard) it holds before storing; when the record fails nothing of the
// batch is stored and every write fails, so none is acknowledged unseen.
func TestWritesRecordTheirHolderFirst(t *testing.T) {
	holders := &fakeHolders{}
	s := New(Config{Dir: t.TempDir()}, nil, slog.New(slog.DiscardHandler))
	s.RecordHolders(holders)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	msg := func(i int, shard uint32) []byte {
		e := elem{service: "svc", instance: "i", id: string(rune('a' + i)), ts: base.Add(time.Duration(i) * time.Second), code: int64(i)}
		b, err := proto.Marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream, ShardId: shard,
			SeriesKey: streamSeriesKey(t, e.service, e.instance), Element: e.value()})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if errs := s.WriteStream(context.Background(), [][]byte{msg(0, 1), msg(1, 0), msg(2, 1), msg(3, 1)}); errs != nil {
		t.Fatalf("write: %v", errs)
	}
	if want := []holderPair{{testGroup, 1}, {testGroup, 0}}; !slices.Equal(holders.calls, want) {
		t.Fatalf("recorded %v, want %v", holders.calls, want)
	}

	holders.err = errors.New("etcd is away")
	errs := s.WriteStream(context.Background(), [][]byte{msg(4, 2), msg(5, 2)})
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Fatalf("writes whose holder could not be recorded: %v, want both failed", errs)
	}
	resp, err := s.QueryStream(context.Background(), streamQuery(&streamv1.QueryRequest{
		Name: testStream, TimeRange: timeRange(base, base.Add(time.Minute)), Limit: 100, Projection: allStreamTags()}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetElements()); n != 4 {
		t.Fatalf("%d elements stored, want the 4 whose holder was recorded", n)
	}
}

// TestStreamElementsKeepTheirVersion: a stream write's version (the
// liaison's) is stored with the element and answered with its series key,
// through a flush too; of two writes of one element on one node the
// higher version wins, whatever order they came in (a late hand-off or
// re-placement of an older copy hides nothing).
func TestStreamElementsKeepTheirVersion(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	e := elem{service: "svc", instance: "i", id: "x", ts: base, code: 1}
	msg := func(version int64, code int64) []byte {
		e.code = code
		b, err := proto.Marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream, Version: version,
			SeriesKey: streamSeriesKey(t, e.service, e.instance), Element: e.value()})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	q := streamQuery(&streamv1.QueryRequest{Name: testStream, TimeRange: timeRange(base, base.Add(time.Minute)), Limit: 10, Projection: allStreamTags()})
	check := func(wantVersion, wantCode int64) {
		t.Helper()
		res, err := s.QueryStreamResult(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.GetElements()) != 1 || res.GetVersions()[0] != wantVersion ||
			!bytes.Equal(res.GetSeriesKeys()[0], streamSeriesKey(t, e.service, e.instance)) ||
			res.GetElements()[0].GetTagFamilies()[1].GetTags()[0].GetValue().GetInt().GetValue() != wantCode {
			t.Fatalf("result %v, want one element of version %d and code %d", res, wantVersion, wantCode)
		}
	}
	if errs := s.WriteStream(context.Background(), [][]byte{msg(42, 1)}); errs != nil {
		t.Fatal(errs)
	}
	check(42, 1)
	if errs := s.WriteStream(context.Background(), [][]byte{msg(7, 2)}); errs != nil {
		t.Fatal(errs)
	}
	check(42, 1) // a straggler with an older version is ignored
	if errs := s.WriteStream(context.Background(), [][]byte{msg(50, 3)}); errs != nil {
		t.Fatal(errs)
	}
	check(50, 3)
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check(50, 3)
}

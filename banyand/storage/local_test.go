package storage

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/pkg/queue"
)

// TestLocalBatchIsNotValidatedTwice: a batch marked Local comes from this
// process's liaison, which validated it, so its nested tag values are not
// checked again; what the write path reads from each message still is.
func TestLocalBatchIsNotValidatedTwice(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	l := s.Listeners()[queue.TopicStreamWrite]
	// A tag value that is not UTF-8: only the nested validation notices.
	badTag := bytes.ReplaceAll(elem{service: "svQ", instance: "i", id: "e1", ts: base}.msg(t), []byte("svQ"), []byte("\xffvQ"))
	noKey, err := proto.Marshal(&clusterv1.StreamWrite{Group: testGroup, Name: testStream,
		Element: elem{service: "svc", instance: "i", id: "e2", ts: base}.value()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res := l.Handle(ctx, queue.Batch{Topic: queue.TopicStreamWrite, Messages: [][]byte{badTag}})
	if len(res.Errs) != 1 || !errors.Is(res.Errs[0], queue.ErrInvalidMessage) {
		t.Fatalf("remote batch with an invalid tag value: %v, want ErrInvalidMessage", res.Errs)
	}
	res = l.Handle(ctx, queue.Batch{Topic: queue.TopicStreamWrite, Local: true, Messages: [][]byte{badTag, []byte("junk"), noKey}})
	if len(res.Errs) != 3 || res.Errs[0] != nil {
		t.Fatalf("local batch: %v, want the first message stored", res.Errs)
	}
	for i, err := range res.Errs[1:] {
		if !errors.Is(err, queue.ErrInvalidMessage) {
			t.Errorf("local batch message %d: %v, want ErrInvalidMessage", i+1, err)
		}
	}

	m := s.Listeners()[queue.TopicMeasureWrite]
	badPoint := bytes.ReplaceAll(point{service: "svQ", ts: base, total: 1}.msg(t), []byte("svQ"), []byte("\xffvQ"))
	res = m.Handle(ctx, queue.Batch{Topic: queue.TopicMeasureWrite, Messages: [][]byte{badPoint}})
	if len(res.Errs) != 1 || !errors.Is(res.Errs[0], queue.ErrInvalidMessage) {
		t.Fatalf("remote measure batch with an invalid tag value: %v, want ErrInvalidMessage", res.Errs)
	}
	res = m.Handle(ctx, queue.Batch{Topic: queue.TopicMeasureWrite, Local: true, Messages: [][]byte{badPoint}})
	if res.Errs != nil {
		t.Fatalf("local measure batch: %v, want it stored", res.Errs)
	}
}

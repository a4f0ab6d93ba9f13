package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/elementid"
)

const (
	// chunkMessages is how many acknowledged messages of one entity one
	// query looks for: pages stay small (no payload is projected).
	chunkMessages = 1000
	// pageSlack leaves room in a page for other runs' data in the range.
	pageSlack     = 64
	queryTimeout  = 30 * time.Second
	missingSample = 10
)

// verify reads back every acknowledged seq. Each entity's seqs have
// timestamps base+0, base+1, ... ms (seq = k*E + e), so it queries one
// entity and a time range covering up to chunkMessages of them, and pages
// with offset while a page comes back full. workers queries run at once.
func verify(ctx context.Context, w workload, m *messages, acked []int64, workers int) *VerifyReport {
	start := time.Now()
	rep := &VerifyReport{Checked: uint64(len(acked))}
	slices.Sort(acked)
	// Group by entity; within one, seqs stay ascending, so do timestamps.
	byEntity := map[int64][]int64{}
	for _, seq := range acked {
		e := m.entity(seq)
		byEntity[e] = append(byEntity[e], seq)
	}
	entities := make(chan []int64, len(byEntity))
	for _, seqs := range byEntity {
		entities <- seqs
	}
	close(entities)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // guards rep and firstErr
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for seqs := range entities {
				for chunk := range slices.Chunk(seqs, chunkMessages) {
					found, queries, err := verifyChunk(ctx, w, m, chunk)
					mu.Lock()
					rep.Queries += queries
					rep.Readable += uint64(len(found))
					for _, seq := range chunk {
						if _, ok := found[seq]; !ok {
							rep.Missing++
							if len(rep.MissingSample) < missingSample {
								rep.MissingSample = append(rep.MissingSample, seq)
							}
						}
					}
					if err != nil && firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		// Unchecked seqs are neither readable nor missing.
		rep.Error = firstErr.Error()
		rep.Missing, rep.MissingSample = 0, nil
	}
	slices.Sort(rep.MissingSample)
	rep.Seconds = time.Since(start).Seconds()
	return rep
}

// verifyChunk finds which of chunk (seqs of one entity, ascending) are
// readable.
func verifyChunk(ctx context.Context, w workload, m *messages, chunk []int64) (map[int64]struct{}, uint64, error) {
	want := make(map[int64]struct{}, len(chunk))
	for _, seq := range chunk {
		want[seq] = struct{}{}
	}
	found := make(map[int64]struct{}, len(chunk))
	q := pageQuery{
		entity: m.entity(chunk[0]),
		fromMs: m.millis(chunk[0]),
		toMs:   m.millis(chunk[len(chunk)-1]) + 1,
		limit:  uint32(len(chunk) + pageSlack),
	}
	var queries uint64
	for {
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		seqs, n, err := w.queryPage(qctx, q)
		cancel()
		queries++
		if err != nil {
			return found, queries, fmt.Errorf("query entity %d, time [%d, %d) ms, offset %d: %w", q.entity, q.fromMs, q.toMs, q.offset, err)
		}
		for _, seq := range seqs {
			if _, ok := want[seq]; ok {
				found[seq] = struct{}{}
			}
		}
		if n < int(q.limit) {
			return found, queries, nil
		}
		q.offset += q.limit
	}
}

// seqOfAnswered is the seq of a stream element answered for entity e, or
// -1 if the element is not one of this run's. The answered id is
// BanyanDB's hash of the written one (pkg/elementid), which does not parse
// back: the timestamp gives the seq, and the id must be the one answered
// for that seq's written id.
func (m *messages) seqOfAnswered(e int64, el *streamv1.Element) int64 {
	k := el.GetTimestamp().AsTime().UnixMilli() - m.baseMillis
	if k < 0 || k%m.stepMillis != 0 {
		return -1
	}
	seq := k/m.stepMillis*m.entities + e
	if el.GetElementId() != elementid.Of(m.md.GetGroup(), m.md.GetName(), m.elementID(seq)) {
		return -1
	}
	return seq
}

package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
	"github.com/banyand-io/banyand/pkg/tagindex"
	"github.com/banyand-io/banyand/pkg/wire"
)

// WriteStream stores a batch of marshalled clusterv1.StreamWrite messages
// with one synced commit. It returns nil when all were stored; otherwise
// errs[i] is message i's failure. A message that does not decode or is
// invalid fails alone with an error wrapping queue.ErrInvalidMessage, and
// the others are stored. It returns only once the stored ones are durable.
func (s *Store) WriteStream(ctx context.Context, msgs [][]byte) []error {
	return s.write(ctx, msgs, newDecoder(tsdb.KindStream, false))
}

// WriteMeasure is WriteStream for marshalled clusterv1.MeasureWrite
// messages. Of several writes of one data point, the one with the highest
// DataPointValue.version wins, and the later one wins a tie.
func (s *Store) WriteMeasure(ctx context.Context, msgs [][]byte) []error {
	return s.write(ctx, msgs, newDecoder(tsdb.KindMeasure, false))
}

// WriteTrace is WriteStream for marshalled clusterv1.TraceWrite messages
// (one span each). Of several writes of one span (trace, timestamp, span
// id) the one with the highest version wins, and the later one wins a tie.
func (s *Store) WriteTrace(ctx context.Context, msgs [][]byte) []error {
	return s.write(ctx, msgs, newDecoder(tsdb.KindTrace, false))
}

func (s *Store) write(ctx context.Context, msgs [][]byte, d *decoder) []error {
	if len(msgs) == 0 {
		return nil
	}
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(msgs))
		}
		errs[i] = err
	}
	wsp := writesPool.Get().(*[]tsdb.Write)
	ws := (*wsp)[:0]
	defer func() {
		clear(ws)     // they alias msgs: keep none of them alive in the pool
		*wsp = ws[:0] // grown by the appends: the pool gets the bigger one back
		writesPool.Put(wsp)
	}()
	idx := make([]int, 0, len(msgs)) // ws[j] came from msgs[idx[j]]
	var pairs []holderPair           // the batch's distinct (group, shard), when recording
	var ranked []topNWrite           // the measure writes, when keeping top-N rankings
	for i, m := range msgs {
		w, err := d.decode(m)
		if err != nil {
			fail(i, err)
			continue
		}
		ix, err := d.index()
		if err != nil {
			fail(i, err)
			continue
		}
		if d.kind == tsdb.KindTrace {
			// The span's entry in the time index, in the same commit; its
			// index records are the span's.
			ws = append(ws, w)
			idx = append(idx, i)
			w = d.traceTime(w)
		}
		w.Index = ix
		ws = append(ws, w)
		idx = append(idx, i)
		if s.holders != nil {
			pairs = addPair(pairs, holderPair{w.Group, d.w.Shard})
		}
		if s.topn != nil && d.kind == tsdb.KindMeasure {
			ranked = append(ranked, topNWrite{at: len(ws) - 1, shard: d.w.Shard})
		}
	}
	if len(ws) == 0 {
		return errs
	}
	if len(ranked) > 0 {
		// The rankings the batch changed are stored in its commit.
		db, err := s.DB()
		var recs []tsdb.Write
		var held []*heldRanking
		if err == nil {
			recs, held, err = s.topn.observe(ctx, db, ws, ranked)
		}
		if err != nil {
			for _, i := range idx {
				fail(i, fmt.Errorf("storage: top-N rankings: %w", err))
			}
			return errs
		}
		ws = append(ws, recs...)
		defer s.topn.committed(held)
	}
	if err := s.commit(ctx, ws, pairs); err != nil {
		for _, i := range idx {
			fail(i, err)
		}
	}
	return errs
}

// commit records the pairs a batch holds (when recording), then stores
// ws as one synced commit: the one exit of every kind's writes.
func (s *Store) commit(ctx context.Context, ws []tsdb.Write, pairs []holderPair) error {
	err := ctx.Err()
	for _, p := range pairs {
		if err != nil {
			break
		}
		err = s.holders.Record(ctx, p.group, p.shard)
	}
	if err == nil {
		db, derr := s.DB()
		if err = derr; err == nil {
			err = mapClosed(db.Write(ctx, ws))
		}
	}
	if err != nil {
		return fmt.Errorf("storage: write batch: %w", err)
	}
	return nil
}

type holderPair struct {
	group string
	shard uint32
}

// addPair adds p to the few distinct pairs of a batch.
func addPair(pairs []holderPair, p holderPair) []holderPair {
	if slices.Contains(pairs, p) {
		return pairs
	}
	return append(pairs, p)
}

// writesPool recycles the decoded writes of a batch: at ~150 bytes a
// write they were a tenth of a data node's allocation.
var writesPool = sync.Pool{New: func() any { return new([]tsdb.Write) }}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queue.ErrInvalidMessage, fmt.Sprintf(format, args...))
}

// decoder reads the writes of one batch with pkg/wire's parser. A batch
// is mostly one stream or measure, so group and name are converted to
// strings once, not once a message.
type decoder struct {
	kind tsdb.Kind
	// timeSeries is TraceTimeSeries(timeName), kept for the batch's name.
	timeName   string
	timeSeries []byte
	// local: the batch is queue.Batch.Local, its values parsed and checked
	// by this process's liaison; they are not read again (wire.Options).
	opts        wire.Options
	w           wire.ClusterWrite
	group, name string
	// spec is the last index spec parsed, and specBytes its encoding: a
	// batch mostly carries one.
	spec      tagindex.Spec
	specBytes []byte
	// full is a write's value parsed whole when the batch skipped values
	// and the write has tags to index.
	full wire.Point
}

func newDecoder(kind tsdb.Kind, local bool) *decoder {
	return &decoder{kind: kind, opts: wire.Options{SkipValues: local}}
}

func (d *decoder) parse(m []byte) error {
	switch d.kind {
	case tsdb.KindStream:
		return wire.ParseStreamWrite(m, &d.w, d.opts)
	case tsdb.KindTrace:
		return wire.ParseTraceWrite(m, &d.w, d.opts)
	}
	return wire.ParseMeasureWrite(m, &d.w, d.opts)
}

// canonical re-encodes a write whose fields protobuf merges, each once.
func (d *decoder) canonical(m []byte) ([]byte, error) {
	var msg proto.Message = new(clusterv1.MeasureWrite)
	switch d.kind {
	case tsdb.KindStream:
		msg = new(clusterv1.StreamWrite)
	case tsdb.KindTrace:
		msg = new(clusterv1.TraceWrite)
	}
	if err := proto.Unmarshal(m, msg); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(msg)
}

func (d *decoder) decode(m []byte) (tsdb.Write, error) {
	err := d.parse(m)
	if err == nil && d.w.Merged {
		var canon []byte
		if canon, err = d.canonical(m); err == nil {
			err = d.parse(canon)
		}
	}
	if err != nil {
		return tsdb.Write{}, invalid("%v write does not decode: %v", d.kind, err)
	}
	cw := &d.w
	w := tsdb.Write{Kind: d.kind, Group: reuse(&d.group, cw.Group), Name: reuse(&d.name, cw.Name), SeriesKey: cw.SeriesKey, Value: cw.Value}
	if cw.Value == nil {
		return tsdb.Write{}, invalid("%v write %s/%s has no value", d.kind, w.Group, w.Name)
	}
	p := &cw.Point
	switch d.kind {
	case tsdb.KindStream:
		w.ElementID, w.Version = string(p.ElementID), cw.Version
	case tsdb.KindTrace:
		if len(p.ElementID) == 0 {
			return tsdb.Write{}, invalid("trace write %s/%s has no span id", w.Group, w.Name)
		}
		w.ElementID, w.Version = string(p.ElementID), cw.Version
	default:
		w.Version = p.Version
	}
	ts, ok := p.UnixNano()
	if !ok {
		return tsdb.Write{}, invalid("%v write %s/%s: timestamp %ds %dns (present: %v) is outside the storable range (years 1678..2262)",
			d.kind, w.Group, w.Name, p.Seconds, p.Nanos, p.Timestamp != nil)
	}
	w.Timestamp = ts
	if err := w.Validate(); err != nil {
		return tsdb.Write{}, invalid("%v write: %v", d.kind, err)
	}
	return w, nil
}

// index returns the index records of the write d parsed last:
// the terms of the tags its index spec names.
func (d *decoder) index() (tsdb.IndexEntries, error) {
	ix := tsdb.IndexEntries{Spec: d.w.IndexSpec}
	if len(ix.Spec) == 0 {
		return ix, nil
	}
	if !bytes.Equal(ix.Spec, d.specBytes) {
		spec, err := tagindex.Parse(ix.Spec)
		if err != nil {
			return ix, invalid("%v write: %v", d.kind, err)
		}
		d.spec, d.specBytes = spec, bytes.Clone(ix.Spec)
	}
	p := &d.w.Point
	if d.opts.SkipValues {
		var err error
		switch d.kind {
		case tsdb.KindStream:
			err = wire.ParseElement(d.w.Value, &d.full)
		case tsdb.KindTrace:
			err = wire.ParseSpanValue(d.w.Value, &d.full)
		default:
			err = wire.ParseDataPoint(d.w.Value, &d.full)
		}
		if err != nil {
			return ix, invalid("%v write does not decode: %v", d.kind, err)
		}
		p = &d.full
	}
	// The series share one buffer, sliced once it stops growing.
	type span struct {
		start, end int
		sorted     bool
		value      int64
	}
	var buf []byte
	var spans []span
	add := func(series []byte, sorted bool, value int64) {
		spans = append(spans, span{len(buf), len(buf) + len(series), sorted, value})
		buf = append(buf, series...)
	}
	d.spec.WriteTerms(p, func(series []byte) { add(series, false, 0) },
		func(series []byte, value int64) { add(series, true, value) })
	for _, sp := range spans {
		series := buf[sp.start:sp.end:sp.end]
		if sp.sorted {
			ix.Sorted = append(ix.Sorted, tsdb.SortedTerm{Series: series, Value: sp.value})
		} else {
			ix.Terms = append(ix.Terms, series)
		}
	}
	return ix, nil
}

// TraceTimeSeries is the series key of a trace name's time index
// (tsdb.KindTraceTime): one series, so a time range is one key range.
func TraceTimeSeries(name string) []byte { return append([]byte{0xff, 't'}, name...) }

// traceTime is the time index entry of span w: keyed by its timestamp,
// its trace's series key and its span id, holding the span without its
// bytes (criteria read it; the span is read from w's record).
func (d *decoder) traceTime(w tsdb.Write) tsdb.Write {
	if d.timeSeries == nil || d.timeName != w.Name {
		d.timeName, d.timeSeries = w.Name, TraceTimeSeries(w.Name)
	}
	eid := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(w.SeriesKey)+len(w.ElementID)), uint64(len(w.SeriesKey)))
	eid = append(append(eid, w.SeriesKey...), w.ElementID...)
	return tsdb.Write{
		Kind: tsdb.KindTraceTime, Group: w.Group, Name: w.Name, SeriesKey: d.timeSeries,
		Timestamp: w.Timestamp, ElementID: string(eid), Version: w.Version,
		Value: wire.AppendSpanIndex(make([]byte, 0, len(w.Value)), w.Value),
	}
}

// reuse returns *last if it equals v (compared without converting), else
// v converted, remembered in *last.
func reuse(last *string, v []byte) string {
	if string(v) != *last {
		*last = string(v)
	}
	return *last
}

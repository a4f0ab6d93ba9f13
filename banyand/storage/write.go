package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// WriteStream stores a batch of marshalled clusterv1.StreamWrite messages
// with one synced commit. It returns nil when all were stored; otherwise
// errs[i] is message i's failure. A message that does not decode or is
// invalid fails alone with an error wrapping queue.ErrInvalidMessage, and
// the others are stored. It returns only once the stored ones are durable.
func (s *Store) WriteStream(ctx context.Context, msgs [][]byte) []error {
	return s.write(ctx, msgs, decodeStreamWrite)
}

// WriteMeasure is WriteStream for marshalled clusterv1.MeasureWrite
// messages. Of several writes of one data point, the one with the highest
// DataPointValue.version wins, and the later one wins a tie.
func (s *Store) WriteMeasure(ctx context.Context, msgs [][]byte) []error {
	return s.write(ctx, msgs, decodeMeasureWrite)
}

func (s *Store) write(ctx context.Context, msgs [][]byte, decode func([]byte, *nameCache) (tsdb.Write, error)) []error {
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
	var names nameCache
	for i, m := range msgs {
		w, err := decode(m, &names)
		if err != nil {
			fail(i, err)
			continue
		}
		ws = append(ws, w)
		idx = append(idx, i)
	}
	if len(ws) == 0 {
		return errs
	}
	err := ctx.Err()
	if err == nil {
		db, derr := s.DB()
		if err = derr; err == nil {
			err = mapClosed(db.Write(ctx, ws))
		}
	}
	if err != nil {
		err = fmt.Errorf("storage: write batch: %w", err)
		for _, i := range idx {
			fail(i, err)
		}
	}
	return errs
}

// writesPool recycles the decoded writes of a batch: at ~150 bytes a
// write they were a tenth of a data node's allocation.
var writesPool = sync.Pool{New: func() any { return new([]tsdb.Write) }}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queue.ErrInvalidMessage, fmt.Sprintf(format, args...))
}

func decodeStreamWrite(m []byte, names *nameCache) (tsdb.Write, error) {
	ww, ok, err := parseWrite(m, true, names)
	if err != nil {
		return tsdb.Write{}, invalid("stream write does not decode: %v", err)
	}
	if !ok {
		return decodeStreamWriteSlow(m)
	}
	if ww.value == nil {
		return tsdb.Write{}, invalid("stream write %s/%s has no element", ww.group, ww.name)
	}
	w := tsdb.Write{
		Kind:      tsdb.KindStream,
		Group:     ww.group,
		Name:      ww.name,
		SeriesKey: ww.seriesKey,
		ElementID: ww.elementID,
		Value:     ww.value,
	}
	return finishWrite(w, ww)
}

func decodeMeasureWrite(m []byte, names *nameCache) (tsdb.Write, error) {
	ww, ok, err := parseWrite(m, false, names)
	if err != nil {
		return tsdb.Write{}, invalid("measure write does not decode: %v", err)
	}
	if !ok {
		return decodeMeasureWriteSlow(m)
	}
	if ww.value == nil {
		return tsdb.Write{}, invalid("measure write %s/%s has no data point", ww.group, ww.name)
	}
	w := tsdb.Write{
		Kind:      tsdb.KindMeasure,
		Group:     ww.group,
		Name:      ww.name,
		SeriesKey: ww.seriesKey,
		Version:   ww.version,
		Value:     ww.value,
	}
	return finishWrite(w, ww)
}

// finishWrite checks the timestamp and the key fields of a parsed write.
func finishWrite(w tsdb.Write, ww wireWrite) (tsdb.Write, error) {
	if ww.hasTS && ww.nanos >= 0 && ww.nanos < 1e9 && ww.seconds >= minNanoSeconds && ww.seconds <= maxNanoSeconds {
		w.Timestamp = ww.seconds*int64(time.Second) + int64(ww.nanos) // valid: no Timestamp to build
	} else {
		var ts *timestamppb.Timestamp
		if ww.hasTS {
			ts = &timestamppb.Timestamp{Seconds: ww.seconds, Nanos: ww.nanos}
		}
		_, err := writeTimestamp(ts)
		if err == nil { // cannot happen: the check above is writeTimestamp's
			err = errors.New("timestamp out of range")
		}
		return tsdb.Write{}, invalid("%v write %s/%s: %v", w.Kind, w.Group, w.Name, err)
	}
	if err := w.Validate(); err != nil {
		return tsdb.Write{}, invalid("%v write: %v", w.Kind, err)
	}
	return w, nil
}

// decodeStreamWriteSlow decodes with proto.Unmarshal, for messages the wire
// parser leaves to it.
func decodeStreamWriteSlow(m []byte) (tsdb.Write, error) {
	var sw clusterv1.StreamWrite
	if err := proto.Unmarshal(m, &sw); err != nil {
		return tsdb.Write{}, invalid("stream write does not decode: %v", err)
	}
	e := sw.GetElement()
	if e == nil {
		return tsdb.Write{}, invalid("stream write %s/%s has no element", sw.GetGroup(), sw.GetName())
	}
	value, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
	if err != nil {
		return tsdb.Write{}, invalid("stream write: %v", err)
	}
	w := tsdb.Write{
		Kind:      tsdb.KindStream,
		Group:     sw.GetGroup(),
		Name:      sw.GetName(),
		SeriesKey: sw.GetSeriesKey(),
		ElementID: e.GetElementId(),
		Value:     value,
	}
	ts := e.GetTimestamp()
	return finishWrite(w, wireWrite{hasTS: ts != nil, seconds: ts.GetSeconds(), nanos: ts.GetNanos()})
}

func decodeMeasureWriteSlow(m []byte) (tsdb.Write, error) {
	var mw clusterv1.MeasureWrite
	if err := proto.Unmarshal(m, &mw); err != nil {
		return tsdb.Write{}, invalid("measure write does not decode: %v", err)
	}
	dp := mw.GetDataPoint()
	if dp == nil {
		return tsdb.Write{}, invalid("measure write %s/%s has no data point", mw.GetGroup(), mw.GetName())
	}
	value, err := proto.MarshalOptions{Deterministic: true}.Marshal(dp)
	if err != nil {
		return tsdb.Write{}, invalid("measure write: %v", err)
	}
	w := tsdb.Write{
		Kind:      tsdb.KindMeasure,
		Group:     mw.GetGroup(),
		Name:      mw.GetName(),
		SeriesKey: mw.GetSeriesKey(),
		Version:   dp.GetVersion(),
		Value:     value,
	}
	ts := dp.GetTimestamp()
	return finishWrite(w, wireWrite{hasTS: ts != nil, seconds: ts.GetSeconds(), nanos: ts.GetNanos()})
}

// Unix nanoseconds cover 1677-09-21 .. 2262-04-11; the seconds bounds below
// keep every nanosecond value of a valid Timestamp inside int64.
const (
	minNanoSeconds = math.MinInt64/int64(time.Second) + 1
	maxNanoSeconds = math.MaxInt64/int64(time.Second) - 1
)

// writeTimestamp converts a write's timestamp to Unix nanoseconds.
func writeTimestamp(ts *timestamppb.Timestamp) (int64, error) {
	if ts == nil {
		return 0, errors.New("no timestamp")
	}
	if err := ts.CheckValid(); err != nil {
		return 0, err
	}
	if ts.GetSeconds() < minNanoSeconds || ts.GetSeconds() > maxNanoSeconds {
		return 0, fmt.Errorf("timestamp %v is outside the storable range (years 1678..2262)", ts.AsTime())
	}
	return ts.GetSeconds()*int64(time.Second) + int64(ts.GetNanos()), nil
}

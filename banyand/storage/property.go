package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/banyand-io/banyand/api/proto/banyandb/cluster/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	"github.com/banyand-io/banyand/banyand/schema"
	"github.com/banyand-io/banyand/banyand/storage/tsdb"
	"github.com/banyand-io/banyand/pkg/queue"
)

// MaxPropertyReplyBytes bounds the stored bytes one property query may
// hold on a data node (the cluster protocol's reply bound): a query over
// more fails with an error wrapping queue.ErrResourceExhausted rather
// than growing the node's memory with the group's size.
const MaxPropertyReplyBytes = 32 << 20

type propertyKey struct{ group, name, id string }

// pendingProperty is a property's record as a batch leaves it.
type pendingProperty struct {
	rec       *clusterv1.StoredProperty
	seriesKey []byte
	dirty     bool
}

// WriteProperties applies marshalled cluster.v1.PropertyWrite messages
// (docs/design/properties.md). This node is the single writer of its
// properties: under propertyMu each write reads the record it replaces
// (or the one an earlier write of the batch left; or the write's base
// when that is later), applies the revision rule (schema.ApplyProperty)
// and the batch's results are one synced commit. A message that does not decode fails alone (queue.ErrInvalidMessage);
// a failed commit fails the batch, nothing written.
func (s *Store) WriteProperties(ctx context.Context, msgs [][]byte) []error {
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(msgs))
		}
		errs[i] = err
	}
	s.propertyMu.Lock()
	defer s.propertyMu.Unlock()
	db, err := s.DB()
	if err != nil {
		for i := range msgs {
			fail(i, err)
		}
		return errs
	}
	pending := map[propertyKey]*pendingProperty{}
	var order []propertyKey // first-seen order: the batch's commit is deterministic
	var idx []int
	var pairs []holderPair
	for i, m := range msgs {
		w, err := decodePropertyWrite(m)
		if err != nil {
			fail(i, err)
			continue
		}
		p := w.GetProperty()
		k := propertyKey{p.GetMetadata().GetGroup(), p.GetMetadata().GetName(), p.GetId()}
		pp := pending[k]
		if pp == nil {
			cur, err := readProperty(ctx, db, k, w.GetSeriesKey())
			if err != nil {
				fail(i, mapClosed(err))
				continue
			}
			pp = &pendingProperty{rec: cur, seriesKey: w.GetSeriesKey()}
			pending[k] = pp
			order = append(order, k)
		}
		if base := w.GetBase(); base != nil && schema.Revision(base.GetProperty()) > schema.Revision(pp.rec.GetProperty()) {
			pp.rec = base // the liaison read a later record than this node holds
		}
		if next, changed := schema.ApplyProperty(pp.rec, w); changed {
			pp.rec, pp.dirty = next, true
		}
		idx = append(idx, i)
		if s.holders != nil {
			pairs = addPair(pairs, holderPair{k.group, w.GetShardId()})
		}
	}
	var ws []tsdb.Write
	for _, k := range order {
		pp := pending[k]
		if !pp.dirty {
			continue
		}
		value, err := proto.Marshal(pp.rec)
		if err != nil {
			err = fmt.Errorf("storage: encode property %s/%s/%s: %w", k.group, k.name, k.id, err)
			for _, i := range idx {
				fail(i, err)
			}
			return errs
		}
		ws = append(ws, tsdb.Write{
			Kind: tsdb.KindProperty, Group: k.group, Name: k.name, SeriesKey: pp.seriesKey,
			ElementID: k.id, Version: schema.Revision(pp.rec.GetProperty()), Value: value,
		})
	}
	if len(ws) == 0 {
		return errs // redeliveries and superseded writes: already durable
	}
	if err := s.commit(ctx, ws, pairs); err != nil {
		for _, i := range idx {
			fail(i, err)
		}
	}
	return errs
}

func decodePropertyWrite(m []byte) (*clusterv1.PropertyWrite, error) {
	var w clusterv1.PropertyWrite
	if err := proto.Unmarshal(m, &w); err != nil {
		return nil, invalid("property write does not decode: %v", err)
	}
	p := w.GetProperty()
	switch {
	case p.GetMetadata().GetGroup() == "" || p.GetMetadata().GetName() == "":
		return nil, invalid("property write without group or name")
	case p.GetId() == "":
		return nil, invalid("property write without id")
	case len(w.GetSeriesKey()) == 0:
		return nil, invalid("property write without series key")
	case schema.Revision(p) <= 0:
		return nil, invalid("property write without a revision")
	}
	return &w, nil
}

// scanProperties calls fn for each stored record of (group, name), of one
// series when seriesKey is set.
func scanProperties(ctx context.Context, db *tsdb.DB, group, name string, seriesKey []byte, fn func(*tsdb.Item) error) error {
	for _, seg := range db.SegmentsIn(tsdb.KindProperty, group, math.MinInt64, math.MaxInt64) {
		sc := tsdb.Scan{Name: name, Begin: math.MinInt64, End: math.MaxInt64, SeriesKey: seriesKey}
		if err := db.ScanSegment(ctx, seg, sc, fn); err != nil {
			return err
		}
	}
	return nil
}

// readProperty returns the stored record of k, nil when there is none.
func readProperty(ctx context.Context, db *tsdb.DB, k propertyKey, seriesKey []byte) (*clusterv1.StoredProperty, error) {
	var best *clusterv1.StoredProperty
	err := scanProperties(ctx, db, k.group, k.name, seriesKey, func(it *tsdb.Item) error {
		if string(it.ElementID) != k.id {
			return nil
		}
		var sp clusterv1.StoredProperty
		if err := proto.Unmarshal(it.Payload, &sp); err != nil {
			return fmt.Errorf("storage: stored property %s/%s/%s: %w", k.group, k.name, k.id, err)
		}
		if best == nil || schema.Revision(sp.GetProperty()) > schema.Revision(best.GetProperty()) {
			best = &sp
		}
		return nil
	})
	return best, err
}

// propertyLayout resolves the tag names of a property schema for the
// criteria evaluation streams and measures use: one family of its tags.
func propertyLayout(p *databasev1.Property) *tagLayout {
	return newTagLayout([]*databasev1.TagFamilySpec{{Name: "", Tags: p.GetTags()}})
}

// positional places a property's tags in its schema's order, as the
// criteria read stored stream and measure tags.
func positional(l *tagLayout, tags []*modelv1.Tag) []*modelv1.TagFamilyForWrite {
	vals := make([]*modelv1.TagValue, len(l.families[0].GetTags()))
	for _, t := range tags {
		if r, ok := l.byName[t.GetKey()]; ok {
			vals[r.tag] = t.GetValue()
		}
	}
	return []*modelv1.TagFamilyForWrite{{Tags: vals}}
}

type propertyHit struct {
	sp    *clusterv1.StoredProperty
	order *modelv1.TagValue // the order_by tag's value, nil without order
}

// QueryProperties answers a property query of one group: the live
// records that match, ordered and at most limit of them, and every
// tombstone met (the liaison keeps the highest revision of a property
// over the nodes, so a deleted one does not come back from a stale copy).
// With no name every schema sent is read; a criteria or order tag another
// schema does not declare skips that schema.
func (s *Store) QueryProperties(ctx context.Context, q *clusterv1.PropertyQuery) (*clusterv1.PropertyQueryResult, error) {
	req := q.GetRequest()
	if len(req.GetGroups()) != 1 || len(q.GetSchemas()) == 0 {
		return nil, fmt.Errorf("%w: a property query names one group and at least one schema", errInvalidQuery)
	}
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	start, st := time.Now(), scanStats{}
	group := req.GetGroups()[0]
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = schema.DefaultPropertyLimit
	}
	var ids map[string]bool
	if len(req.GetIds()) > 0 {
		ids = make(map[string]bool, len(req.GetIds()))
		for _, id := range req.GetIds() {
			ids[id] = true
		}
	}
	var live []propertyHit
	var tombs []*clusterv1.StoredProperty
	held := 0
	for _, sch := range q.GetSchemas() {
		name := sch.GetMetadata().GetName()
		l := propertyLayout(sch)
		c, err := compileCriteria(req.GetCriteria(), l)
		var orderRef tagRef
		hasOrder := req.GetOrderBy().GetTagName() != ""
		if err == nil && hasOrder {
			orderRef, err = l.tag(req.GetOrderBy().GetTagName())
		}
		if err != nil {
			if len(q.GetSchemas()) > 1 && errors.Is(err, errInvalidQuery) {
				continue
			}
			return nil, queryError(err)
		}
		visit := func(it *tsdb.Item) error {
			st.scanned++
			if ids != nil && !ids[string(it.ElementID)] {
				return nil
			}
			if held += len(it.Payload); held > MaxPropertyReplyBytes {
				return fmt.Errorf("%w: property query holds more than %d bytes on this node; ask for fewer", queue.ErrResourceExhausted, MaxPropertyReplyBytes)
			}
			sp := new(clusterv1.StoredProperty)
			if err := proto.Unmarshal(it.Payload, sp); err != nil {
				return fmt.Errorf("storage: stored property %s/%s/%s: %w", group, name, it.ElementID, err)
			}
			if sp.GetDeleted() {
				tombs = append(tombs, sp)
				return nil
			}
			tfs := positional(l, sp.GetProperty().GetTags())
			if c.match != nil && !c.match(tfs) {
				return nil
			}
			st.matched++
			h := propertyHit{sp: sp}
			if hasOrder {
				h.order = lookup(tfs, orderRef)
			}
			live = append(live, h)
			return nil
		}
		if ids == nil {
			err = scanProperties(ctx, db, group, name, nil, visit)
		} else {
			for id := range ids {
				sk, kerr := schema.PropertySeriesKey(nil, name, id)
				if kerr != nil {
					return nil, fmt.Errorf("%w: id %q: %w", errInvalidQuery, id, kerr)
				}
				if err = scanProperties(ctx, db, group, name, sk, visit); err != nil {
					break
				}
			}
		}
		if err != nil {
			return nil, mapClosed(err)
		}
	}
	schema.SortProperties(live, func(h propertyHit) (*modelv1.TagValue, *clusterv1.StoredProperty) { return h.order, h.sp },
		req.GetOrderBy().GetSort() == modelv1.Sort_SORT_DESC)
	out := &clusterv1.PropertyQueryResult{Properties: make([]*clusterv1.StoredProperty, 0, min(limit, len(live))+len(tombs))}
	for _, h := range live[:min(limit, len(live))] {
		out.Properties = append(out.Properties, h.sp)
	}
	out.Properties = append(out.Properties, tombs...)
	out.Trace = stageTrace(req.GetTrace(), "data node: scan properties", start, st, len(out.Properties))
	return out, nil
}

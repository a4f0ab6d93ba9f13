package wire

import "google.golang.org/protobuf/encoding/protowire"

// ClusterWrite is a cluster.v1.StreamWrite or MeasureWrite read at the
// wire level: group (1), name (2), shard_id (3), series_key (4), the
// element or data point (5), schema_mod_revision (6).
type ClusterWrite struct {
	Group, Name []byte
	Shard       uint32
	SeriesKey   []byte
	// Value is the ElementValue or DataPointValue as received, parsed into
	// Point; nil when absent.
	Value    []byte
	Point    Point
	Revision int64
	// Version is a StreamWrite's version (field 7; MeasureWrite has none).
	Version int64
	// IndexSpec is the write's index_spec (field 8, pkg/tagindex).
	IndexSpec []byte
	// Merged: a singular field occurs more than once, here or in Point.
	Merged bool
}

// Options change what a cluster write parse reads.
type Options struct {
	// SkipValues leaves the value's tags and fields unread (Point.Tags,
	// FamEnd and Fields stay empty, their bytes unchecked): for writes
	// this process's own liaison encoded from values it parsed with the
	// full contract, handed over in memory (queue.Batch.Local). Everything
	// else is parsed and checked as always.
	SkipValues bool
}

// ParseStreamWrite reads a cluster.v1.StreamWrite.
func ParseStreamWrite(b []byte, w *ClusterWrite, o Options) error {
	return parseClusterWrite(b, w, func(v []byte, p *Point) error { return parseElement(v, p, o.SkipValues) })
}

// ParseMeasureWrite reads a cluster.v1.MeasureWrite.
func ParseMeasureWrite(b []byte, w *ClusterWrite, o Options) error {
	return parseClusterWrite(b, w, func(v []byte, p *Point) error { return parseDataPoint(v, p, o.SkipValues) })
}

func parseClusterWrite(b []byte, w *ClusterWrite, parseValue func([]byte, *Point) error) error {
	*w = ClusterWrite{Point: w.Point}
	w.Point.Reset()
	for len(b) > 0 {
		f, n, err := next(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case f.typ == protowire.VarintType && f.num == 3:
			w.Shard = uint32(f.x)
		case f.typ == protowire.VarintType && f.num == 6:
			w.Revision = int64(f.x)
		case f.typ == protowire.VarintType && f.num == 7:
			w.Version = int64(f.x)
		case f.typ != protowire.BytesType:
		case f.num == 1 || f.num == 2:
			if err := checkUTF8(f.v, "group or name"); err != nil {
				return err
			}
			if f.num == 1 {
				w.Group = f.v
			} else {
				w.Name = f.v
			}
		case f.num == 4:
			w.SeriesKey = f.v
		case f.num == 8:
			w.IndexSpec = f.v
		case f.num == 5:
			w.Merged = w.Merged || w.Value != nil
			w.Value = f.v
			if err := parseValue(f.v, &w.Point); err != nil {
				return err
			}
		}
	}
	w.Merged = w.Merged || w.Point.Merged
	return nil
}

// ClusterWriteSize bounds AppendClusterWrite's output.
func ClusterWriteSize(group, name string, seriesKey, value, indexSpec []byte) int {
	return len(group) + len(name) + len(seriesKey) + len(value) + len(indexSpec) + 9*protowire.SizeVarint(1<<63)
}

// AppendClusterWrite appends a cluster.v1.StreamWrite or MeasureWrite
// around value, the encoded ElementValue or DataPointValue, as
// proto.Marshal encodes the struct: fields in number order, zero scalars
// left out, the value always present. version is a StreamWrite's; a
// MeasureWrite's is 0 (its version is in the data point). indexSpec is
// the write's index_spec.
func AppendClusterWrite(b []byte, group, name string, shard uint32, seriesKey, value []byte, rev, version int64, indexSpec []byte) []byte {
	if group != "" {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, group)
	}
	if name != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, name)
	}
	if shard != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(shard))
	}
	if len(seriesKey) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, seriesKey)
	}
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, value)
	if rev != 0 {
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(rev))
	}
	if version != 0 {
		b = protowire.AppendTag(b, 7, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(version))
	}
	if len(indexSpec) > 0 {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, indexSpec)
	}
	return b
}

// NullValue is a TagValue or FieldValue holding an explicit null, as
// proto.Marshal encodes it: what a write's missing values become when it
// is rebuilt in schema order.
var NullValue = Value{Raw: []byte{0x08, 0x00}, Kind: KindNull}

// AppendElement appends p as a stream.v1.ElementValue: its element id,
// timestamp and tag families, each value copied from its Raw bytes.
func AppendElement(b []byte, p *Point) []byte {
	if len(p.ElementID) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p.ElementID)
	}
	if p.Timestamp != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Timestamp)
	}
	return appendFamilies(b, 3, p)
}

// AppendDataPoint appends p as a measure.v1.DataPointValue: timestamp, tag
// families, fields and version.
func AppendDataPoint(b []byte, p *Point) []byte {
	if p.Timestamp != nil {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Timestamp)
	}
	b = appendFamilies(b, 2, p)
	for i := range p.Fields {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Fields[i].Raw)
	}
	if p.Version != 0 {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(p.Version))
	}
	return b
}

func appendFamilies(b []byte, num protowire.Number, p *Point) []byte {
	for fi := range p.FamEnd {
		tags := p.Family(fi)
		size := 0
		for i := range tags {
			size += 1 + protowire.SizeBytes(len(tags[i].Raw))
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		for i := range tags {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, tags[i].Raw)
		}
	}
	return b
}

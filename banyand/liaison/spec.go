package liaison

import (
	"bytes"
	"slices"

	"google.golang.org/protobuf/proto"

	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

// spec is the order a write's values come in when it names them: its tag
// family spec and, for a measure, its field names.
type spec struct {
	families []specFamily
	// fields are a measure spec's field names; hasFields says there is a
	// field list (a measure spec), even an empty one.
	fields    []string
	hasFields bool
}

type specFamily struct {
	name string
	tags []string
}

// decodeStreamSpec decodes a stream write's tag family specs (each
// occurrence of the repeated field, validated by the wire parser).
func decodeStreamSpec(raw [][]byte) (*spec, error) {
	s := &spec{}
	for _, b := range raw {
		var f streamv1.TagFamilySpec
		if err := proto.Unmarshal(b, &f); err != nil {
			return nil, err
		}
		s.families = append(s.families, specFamily{name: f.GetName(), tags: f.GetTagNames()})
	}
	return s, nil
}

// decodeMeasureSpec decodes a measure write's data point spec (one
// occurrence: a merged request is canonicalised before this).
func decodeMeasureSpec(raw [][]byte) (*spec, error) {
	var dps measurev1.DataPointSpec
	for _, b := range raw {
		opts := proto.UnmarshalOptions{Merge: true}
		if err := opts.Unmarshal(b, &dps); err != nil {
			return nil, err
		}
	}
	s := &spec{fields: dps.GetFieldNames(), hasFields: true}
	for _, f := range dps.GetTagFamilySpec() {
		s.families = append(s.families, specFamily{name: f.GetName(), tags: f.GetTagNames()})
	}
	return s, nil
}

// placement is a spec resolved against a layout: where each value the
// spec names goes in schema order.
type placement struct {
	families []specFamily
	tags     [][]int // spec family i, tag j → position among all schema tags
	fields   []int   // spec field j → schema field
	// hasFields: the write's fields are placed too (a measure spec).
	hasFields bool
}

func (l *layout) place(s *spec) (*placement, *writeError) {
	p := &placement{families: s.families, tags: make([][]int, len(s.families)), hasFields: s.hasFields}
	for i, sf := range s.families {
		fi, ok := l.familyIndex[sf.name]
		if !ok {
			return nil, invalid("tag family %q is not in the schema of %s/%s", sf.name, l.group, l.name)
		}
		fam := &l.families[fi]
		for _, name := range sf.tags {
			ti, ok := fam.index[name]
			if !ok {
				return nil, invalid("tag %q is not in tag family %q", name, sf.name)
			}
			p.tags[i] = append(p.tags[i], fam.start+ti)
		}
	}
	for _, name := range s.fields {
		fi, ok := l.fieldIndex[name]
		if !ok {
			return nil, invalid("field %q is not in the schema of %s/%s", name, l.group, l.name)
		}
		p.fields = append(p.fields, fi)
	}
	return p, nil
}

// reorder writes in's values to out in schema order, every family and
// field of the schema present, the values the spec leaves out null.
func (pl *placement) reorder(l *layout, in, out *wire.Point) *writeError {
	if len(in.FamEnd) != len(pl.tags) {
		return invalid("%d tag families written but the spec names %d", len(in.FamEnd), len(pl.tags))
	}
	out.Reset()
	out.ElementID, out.Timestamp, out.Seconds, out.Nanos, out.Version, out.Span = in.ElementID, in.Timestamp, in.Seconds, in.Nanos, in.Version, in.Span
	for range l.numTags {
		out.Tags = append(out.Tags, wire.NullValue)
	}
	for i := range l.families {
		out.FamEnd = append(out.FamEnd, l.families[i].start+len(l.families[i].tags))
	}
	for si, at := range pl.tags {
		values := in.Family(si)
		if len(values) != len(at) {
			return invalid("tag family %q: %d values for %d spec tags", pl.families[si].name, len(values), len(at))
		}
		for vi, pos := range at {
			out.Tags[pos] = values[vi]
		}
	}
	if !pl.hasFields {
		out.Fields = append(out.Fields, in.Fields...)
		return nil
	}
	if len(in.Fields) != len(pl.fields) {
		return invalid("%d field values for %d spec fields", len(in.Fields), len(pl.fields))
	}
	for range l.fields {
		out.Fields = append(out.Fields, wire.NullValue)
	}
	for i, pos := range pl.fields {
		out.Fields[pos] = in.Fields[i]
	}
	return nil
}

// specInForce is the spec a write stream's values are placed by: the last
// one a message carried stays in force for the messages after it, as in
// BanyanDB, also across a change of metadata, until a message carries
// another. It is decoded once and placed once per layout.
type specInForce struct {
	raw    [][]byte // copies: the request's buffer is given back
	layout *layout
	placed *placement
	werr   *writeError
}

// set makes raw, a request's spec occurrences, the spec in force.
func (c *specInForce) set(raw [][]byte) {
	if slices.EqualFunc(c.raw, raw, bytes.Equal) {
		return
	}
	c.raw, c.layout, c.placed, c.werr = c.raw[:0], nil, nil, nil
	for _, b := range raw {
		c.raw = append(c.raw, bytes.Clone(b))
	}
}

// active reports whether a spec is in force.
func (c *specInForce) active() bool { return len(c.raw) > 0 }

// placement returns the spec in force placed on l.
func (c *specInForce) placement(l *layout, decode func([][]byte) (*spec, error)) (*placement, *writeError) {
	if c.layout == l {
		return c.placed, c.werr
	}
	s, err := decode(c.raw)
	if err != nil { // the wire parser validated the spec: not the client's doing
		c.placed, c.werr = nil, &writeError{status: internalError, reason: "decode spec: " + err.Error()}
	} else {
		c.placed, c.werr = l.place(s)
	}
	c.layout = l
	return c.placed, c.werr
}

package bench

import (
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	measurev1 "github.com/banyand-io/banyand/api/proto/banyandb/measure/v1"
	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
)

// oapEncoding is what an oap-shaped run's requests share: the order the
// values are written in and the values that do not change per message,
// encoded once.
type oapEncoding struct {
	layout *oapLayout
	// fams are the column indexes of each tag family, families and tags
	// in the written order: the schema's, or with the spec alphabetical.
	fams [][]int
	// fields are the field columns' indexes in the written order.
	fields []int
	// cached[c] is constant column c's value; perEntity[c][e] entity e's
	// value of column c when there are few enough entities to keep.
	cached    [][]byte
	perEntity [][][]byte
	// text is the run's log text (oapLogLine).
	text string
}

// oapElementIDLen is the length of an oap stream element id, a log's
// unique_id: as long as OAP's (a UUID's 32 hex digits).
const oapElementIDLen = 32

// newOAPEncoding orders and encodes layout's values for the run m.
func newOAPEncoding(m *messages, layout *oapLayout) *oapEncoding {
	o := &oapEncoding{layout: layout, cached: make([][]byte, len(layout.cols)), perEntity: make([][][]byte, len(layout.cols)), text: oapText(m.payload)}
	m.oap = o
	index := map[string]int{}
	for i, c := range layout.cols {
		index[c.Name] = i
		switch {
		case c.varies == oapConst:
			o.cached[i] = c.value(m, 0, nil)
		case c.varies == oapPerEntity && m.entities <= maxCachedEntities:
			o.perEntity[i] = make([][]byte, m.entities)
			for e := range m.entities {
				o.perEntity[i][e] = c.value(m, e, nil) // seq e is entity e's
			}
		}
	}
	fams := layout.tagFamilies()
	if m.spec {
		fams = sortedFamilies(fams)
	}
	for _, f := range fams {
		names := sortedTags(f)
		if !m.spec {
			names = names[:0]
			for _, t := range f.GetTags() {
				names = append(names, t.GetName())
			}
		}
		cols := make([]int, len(names))
		for i, n := range names {
			cols[i] = index[n]
		}
		o.fams = append(o.fams, cols)
	}
	for _, c := range layout.fieldColumns() {
		o.fields = append(o.fields, index[c.Name])
	}
	if m.spec {
		o.fields = o.fields[:0]
		for _, n := range sortedFields(layout.measure(m.md).GetFields()) {
			o.fields = append(o.fields, index[n])
		}
	}
	return o
}

// value is column c's encoded value for message seq.
func (m *messages) oapValue(c int, seq int64) []byte {
	o := m.oap
	if v := o.cached[c]; v != nil {
		return v
	}
	if pe := o.perEntity[c]; pe != nil {
		return pe[m.entity(seq)]
	}
	return o.layout.cols[c].value(m, seq, nil)
}

// oapFamilies encodes message seq's tag families, each a
// TagFamilyForWrite, and returns them with their summed field size as
// field num.
func (m *messages) oapFamilies(seq int64, num protowire.Number) (fams [][]byte, size int) {
	for _, cols := range m.oap.fams {
		n := 0
		for _, c := range cols {
			n += sizeField(len(m.oapValue(c, seq)))
		}
		f := make([]byte, 0, n)
		for _, c := range cols {
			f = appendField(f, 1, m.oapValue(c, seq))
		}
		fams = append(fams, f)
		size += protowire.SizeTag(num) + protowire.SizeBytes(len(f))
	}
	return fams, size
}

// oapStreamRequest encodes message seq as a log element with id.
func (m *messages) oapStreamRequest(id uint64, seq int64, withMetadata bool) []byte {
	elID := []byte(m.elementID(seq))
	var tsBuf [24]byte
	ts := m.timestamp(tsBuf[:0], seq)
	fams, famSize := m.oapFamilies(seq, 3)
	size := sizeField(len(elID)) + sizeField(len(ts)) + famSize
	return m.writeRequest(id, withMetadata, size, func(b []byte) []byte {
		b = appendField(b, 1, elID)
		b = appendField(b, 2, ts)
		for _, f := range fams {
			b = appendField(b, 3, f)
		}
		return b
	})
}

// oapMeasureRequest encodes message seq as a metric's data point with id.
func (m *messages) oapMeasureRequest(id uint64, seq int64, withMetadata bool) []byte {
	var tsBuf [24]byte
	ts := m.timestamp(tsBuf[:0], seq)
	fams, size := m.oapFamilies(seq, 2)
	size += sizeField(len(ts))
	fields := make([][]byte, len(m.oap.fields))
	for i, c := range m.oap.fields {
		fields[i] = m.oapValue(c, seq)
		size += sizeField(len(fields[i]))
	}
	return m.writeRequest(id, withMetadata, size, func(b []byte) []byte {
		b = appendField(b, 1, ts)
		for _, f := range fams {
			b = appendField(b, 2, f)
		}
		for _, f := range fields {
			b = appendField(b, 3, f)
		}
		return b
	})
}

// oapElementID pads seq to oapElementIDLen.
func (m *messages) oapElementID(seq int64) string {
	digits := strconv.FormatInt(seq, 10)
	pad := oapElementIDLen - len(m.runID) - 1 - len(digits)
	b := make([]byte, 0, oapElementIDLen+len(digits))
	b = append(append(b, m.runID...), '-')
	for range pad {
		b = append(b, '0')
	}
	return string(append(b, digits...))
}

// oapEntityCriteria selects entity e by its entity tags.
func (m *messages) oapEntityCriteria(e int64) *modelv1.Criteria {
	var crit *modelv1.Criteria
	for _, c := range m.oap.layout.entityColumns() {
		v := &modelv1.TagValue{}
		_ = proto.Unmarshal(c.value(m, e, nil), v) // encoded here, valid
		cond := &modelv1.Criteria{Exp: &modelv1.Criteria_Condition{Condition: &modelv1.Condition{Name: c.Name, Op: modelv1.Condition_BINARY_OP_EQ, Value: v}}}
		if crit == nil {
			crit = cond
			continue
		}
		crit = &modelv1.Criteria{Exp: &modelv1.Criteria_Le{Le: &modelv1.LogicalExpression{Op: modelv1.LogicalExpression_LOGICAL_OP_AND, Left: crit, Right: cond}}}
	}
	return crit
}

// oapEntityProjection projects the entity tags, all in storage-only.
func (m *messages) oapEntityProjection() *modelv1.TagProjection {
	f := &modelv1.TagProjection_TagFamily{Name: famStorageOnly}
	for _, c := range m.oap.layout.entityColumns() {
		f.Tags = append(f.Tags, c.Name)
	}
	return &modelv1.TagProjection{TagFamilies: []*modelv1.TagProjection_TagFamily{f}}
}

// oapHasEntityTags reports whether fams hold entity e's entity tags under
// their names.
func (m *messages) oapHasEntityTags(e int64, fams []*modelv1.TagFamily) bool {
	want := map[string][]byte{}
	for _, c := range m.oap.layout.entityColumns() {
		want[c.Name] = c.value(m, e, nil)
	}
	found := 0
	for _, f := range fams {
		for _, t := range f.GetTags() {
			w, ok := want[t.GetKey()]
			if !ok {
				continue
			}
			if got, err := proto.Marshal(t.GetValue()); err != nil || string(got) != string(w) {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// oapFieldNames are the metric's fields, for the projection.
func (m *messages) oapFieldNames() []string {
	var names []string
	for _, c := range m.oap.layout.fieldColumns() {
		names = append(names, c.Name)
	}
	return names
}

// oapHasFields reports whether dp holds message seq's fields under their
// names.
func (m *messages) oapHasFields(seq int64, dp *measurev1.DataPoint) bool {
	cols := m.oap.layout.fieldColumns()
	found := 0
	for _, f := range dp.GetFields() {
		for _, c := range cols {
			if c.Name != f.GetName() {
				continue
			}
			if got, err := proto.Marshal(f.GetValue()); err != nil || string(got) != string(c.value(m, seq, nil)) {
				return false
			}
			found++
		}
	}
	return found == len(cols)
}

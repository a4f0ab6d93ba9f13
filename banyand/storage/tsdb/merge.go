package tsdb

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// measureMerger resolves several writes of one key of a versioned kind
// (data points, stream elements, properties; the kind is the key's first
// byte): the operand with the highest version wins, and among equal versions the newest
// write wins. So a redelivery (same version) overwrites itself, a correction
// with a higher version replaces the point, and a late write with a lower
// version is ignored, whatever order the writes were committed in, without
// reading before writing. "Newest" is Pebble's sequence order, i.e. the order
// in which batches committed.
//
// The name is stored in the database's OPTIONS file; changing it makes
// existing directories refuse to open, so it never changes.
var measureMerger = &pebble.Merger{
	Name: "banyand.measure.max-version.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		if len(key) == 0 {
			return nil, errMalformed
		}
		k := Kind(key[0])
		v, err := valueVersion(k, value)
		if err != nil {
			return nil, err
		}
		return &maxVersionMerger{kind: k, best: append([]byte(nil), value...), version: v}, nil
	},
}

type maxVersionMerger struct {
	kind    Kind
	best    []byte
	version int64
}

// MergeNewer takes value if its version is at least the best so far: a
// newer write wins ties.
func (m *maxVersionMerger) MergeNewer(value []byte) error {
	v, err := valueVersion(m.kind, value)
	if err != nil {
		return err
	}
	if v >= m.version {
		m.take(value, v)
	}
	return nil
}

// MergeOlder takes value only if its version is strictly higher: an older
// write loses ties.
func (m *maxVersionMerger) MergeOlder(value []byte) error {
	v, err := valueVersion(m.kind, value)
	if err != nil {
		return err
	}
	if v > m.version {
		m.take(value, v)
	}
	return nil
}

func (m *maxVersionMerger) take(value []byte, v int64) {
	m.best = append(m.best[:0], value...) // Pebble keeps ownership of value
	m.version = v
}

func (m *maxVersionMerger) Finish(bool) ([]byte, io.Closer, error) { return m.best, nil, nil }

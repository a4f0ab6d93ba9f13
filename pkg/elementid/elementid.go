// Package elementid computes the element id a stream query answers.
//
// BanyanDB stores a stream element under a 64-bit hash of its group, stream
// name and written id, and answers that hash, not the written id: the 16
// lower-case hex digits of xxhash64("group|name|id"), big-endian, zero
// padded. banyand keeps the written id in storage (its keys need it) and
// answers this form, so clients see what BanyanDB shows them. The hash is
// one-way: a reader that wrote the element compares the answer with Of of
// the id it wrote.
package elementid

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/cespare/xxhash/v2"
)

// Of is the id answered for the element written with id to stream name of
// group.
func Of(group, name, id string) string {
	var buf [128]byte
	b := append(buf[:0], group...)
	b = append(b, '|')
	b = append(b, name...)
	b = append(b, '|')
	b = append(b, id...)
	return format(xxhash.Sum64(b))
}

// Unnamed is the id answered for an element written without one. BanyanDB
// answers an id it generated when writing; banyand answers a hash of what
// identifies such an element in storage (group, stream name, series key
// and timestamp), so the answer is the same on every read. The leading
// 0xff keeps its inputs apart from those of Of, whose group name is text.
func Unnamed(group, name, seriesKey string, unixNano int64) string {
	var buf [128]byte
	b := append(buf[:0], 0xff)
	b = binary.AppendUvarint(b, uint64(len(group)))
	b = append(b, group...)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano))
	b = append(b, seriesKey...)
	return format(xxhash.Sum64(b))
}

func format(h uint64) string {
	var raw [8]byte
	var out [16]byte
	binary.BigEndian.PutUint64(raw[:], h)
	hex.Encode(out[:], raw[:])
	return string(out[:])
}

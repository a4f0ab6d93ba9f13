// Package codec lays schema objects out as storage keys and values, shared
// by the etcd and local stores so both use the same layout:
//
//	group/<name>
//	stream/<group>/<name>
//	measure/<group>/<name>
//
// relative to the store's schema prefix. Values are proto-marshalled.
package codec

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/banyand-io/banyand/pkg/registry"
)

// Path is the key of k relative to the schema prefix.
func Path(k registry.Key) string {
	if k.Kind == registry.KindGroup {
		return "group/" + k.Name
	}
	return k.Kind.String() + "/" + k.Group + "/" + k.Name
}

// KindPrefix is the prefix of every object of kind, ending in '/'.
func KindPrefix(kind registry.Kind) string { return kind.String() + "/" }

// MembersPrefix is the prefix of the streams or measures of one group.
func MembersPrefix(kind registry.Kind, group string) string {
	return kind.String() + "/" + group + "/"
}

// Parse is the inverse of Path.
func Parse(rel string) (registry.Key, error) {
	kindName, rest, ok := strings.Cut(rel, "/")
	if !ok {
		return registry.Key{}, fmt.Errorf("key %q: no kind", rel)
	}
	kind, ok := registry.ParseKind(kindName)
	if !ok {
		return registry.Key{}, fmt.Errorf("key %q: unknown kind %q", rel, kindName)
	}
	if kind == registry.KindGroup {
		if rest == "" || strings.Contains(rest, "/") {
			return registry.Key{}, fmt.Errorf("key %q: malformed group key", rel)
		}
		return registry.GroupKey(rest), nil
	}
	group, name, ok := strings.Cut(rest, "/")
	if !ok || group == "" || name == "" || strings.Contains(name, "/") {
		return registry.Key{}, fmt.Errorf("key %q: malformed %s key", rel, kind)
	}
	return registry.Key{Kind: kind, Group: group, Name: name}, nil
}

// ErrMismatch marks a value whose metadata names another object than its key.
var ErrMismatch = errors.New("metadata does not match key")

// Decode unmarshals and validates the value stored under k. Anything that
// fails here was not written by a registry store and must be skipped.
func Decode(k registry.Key, data []byte) (proto.Message, error) {
	m, err := registry.NewMessage(k.Kind)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", k, err)
	}
	if err := registry.Validate(m); err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	if got, _ := registry.KeyOf(m); got != k {
		return nil, fmt.Errorf("%s: value is %s: %w", k, got, ErrMismatch)
	}
	return m, nil
}

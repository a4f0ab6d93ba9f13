package node

import (
	"errors"
	"slices"
	"testing"

	commonv1 "github.com/banyand-io/banyand/api/proto/banyandb/common/v1"
	databasev1 "github.com/banyand-io/banyand/api/proto/banyandb/database/v1"
)

func testNode(name, addr string, roles ...databasev1.Role) *databasev1.Node {
	return &databasev1.Node{
		Metadata:    &commonv1.Metadata{Name: name},
		GrpcAddress: addr,
		Roles:       roles,
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *databasev1.Node
		ok   bool
	}{
		{"valid", testNode("a", "127.0.0.1:1", databasev1.Role_ROLE_DATA), true},
		{"no roles", testNode("a", "127.0.0.1:1"), true},
		{"nil", nil, false},
		{"no metadata", &databasev1.Node{GrpcAddress: "x:1"}, false},
		{"empty name", testNode("", "x:1"), false},
		{"slash in name", testNode("a/b", "x:1"), false},
		{"no address", testNode("a", ""), false},
		{"unspecified role", testNode("a", "x:1", databasev1.Role_ROLE_UNSPECIFIED), false},
		{"unknown role", testNode("a", "x:1", databasev1.Role(42)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.node)
			if tc.ok && err != nil {
				t.Fatalf("Validate = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidNode) {
				t.Fatalf("Validate = %v, want ErrInvalidNode", err)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	a1, a2 := testNode("a", "x:1"), testNode("a", "x:2")
	b, c := testNode("b", "x:3"), testNode("c", "x:4")
	m := func(ns ...*databasev1.Node) map[string]*databasev1.Node {
		out := map[string]*databasev1.Node{}
		for _, n := range ns {
			out[n.GetMetadata().GetName()] = n
		}
		return out
	}
	type ev struct {
		typ  EventType
		name string
		addr string
	}
	for _, tc := range []struct {
		name       string
		prev, next map[string]*databasev1.Node
		want       []ev
	}{
		{"nil to empty", nil, m(), nil},
		{"all new", nil, m(b, a1), []ev{{EventAdd, "a", "x:1"}, {EventAdd, "b", "x:3"}}},
		{"equal is silent", m(a1, b), m(testNode("a", "x:1"), b), nil},
		{"mixed", m(a1, b), m(a2, c), []ev{
			{EventUpdate, "a", "x:2"}, {EventDelete, "b", "x:3"}, {EventAdd, "c", "x:4"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ev
			for _, e := range Diff(tc.prev, tc.next) {
				got = append(got, ev{e.Type, e.Name(), e.Node.GetGrpcAddress()})
				if e.Type == EventUpdate && e.Prev == nil {
					t.Errorf("update of %s has no Prev", e.Name())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Diff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSorted(t *testing.T) {
	got := Sorted(map[string]*databasev1.Node{"b": testNode("b", "x:1"), "a": testNode("a", "x:2")})
	if len(got) != 2 || got[0].GetMetadata().GetName() != "a" || got[1].GetMetadata().GetName() != "b" {
		t.Fatalf("Sorted = %v", got)
	}
}

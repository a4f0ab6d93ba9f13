package tagindex

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	modelv1 "github.com/banyand-io/banyand/api/proto/banyandb/model/v1"
	streamv1 "github.com/banyand-io/banyand/api/proto/banyandb/stream/v1"
	"github.com/banyand-io/banyand/pkg/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpecRoundTrip(t *testing.T) {
	spec := Spec{
		{Family: 1, Tag: 2, Name: "b", Sorted: true},
		{Family: 0, Tag: 0, Name: "a", Analyzer: "url"},
		{Family: 1, Tag: 2, Name: "b"},
		{Family: 0, Tag: 0, Name: "a"},
	}.Normalize()
	if len(spec) != 4 || spec[0].Analyzer != "" || spec[1].Analyzer != "url" || spec[2].Name != "b" {
		t.Fatalf("Normalize: %+v", spec)
	}
	got, err := Parse(spec.Append(nil))
	if err != nil || !slices.Equal(got, spec) {
		t.Fatalf("Parse(Append) = %+v, %v; want %+v", got, err, spec)
	}
	if !got.Covers("a", "url") || got.Covers("a", "standard") || got.Covers("c", "") || !got.CoversSorted("b") || got.CoversSorted("a") {
		t.Error("Covers")
	}
	if b := (Spec{}).Append(nil); len(b) != 0 {
		t.Errorf("empty spec encodes as %x", b)
	}
}

func TestParseRefusesMalformedSpecs(t *testing.T) {
	good := Spec{{Name: "a", Analyzer: "url"}}.Append(nil)
	for name, b := range map[string][]byte{
		"format":           {9},
		"truncated":        good[:len(good)-1],
		"unknown analyzer": Spec{{Name: "a", Analyzer: "klingon"}}.Append(nil),
		"huge position":    {specFormat, 0xff, 0xff, 0xff, 0x7f, 0, 1, 'a', 0, 0},
		"no flags":         {specFormat, 0, 0, 1, 'a', 0},
		"unknown flag":     {specFormat, 0, 0, 1, 'a', 0, 2},
		"bad varint":       {specFormat, 0xff},
	} {
		if _, err := Parse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Parse(%x) = %v, want ErrMalformed", name, b, err)
		}
	}
}

func TestWriteTerms(t *testing.T) {
	ev := &streamv1.ElementValue{
		ElementId: "e", Timestamp: timestamppb.Now(),
		TagFamilies: []*modelv1.TagFamilyForWrite{{Tags: []*modelv1.TagValue{
			{Value: &modelv1.TagValue_Str{Str: &modelv1.Str{Value: "GET /api/users"}}},
			{Value: &modelv1.TagValue_Int{Int: &modelv1.Int{Value: 7}}},
			{Value: &modelv1.TagValue_StrArray{StrArray: &modelv1.StrArray{Value: []string{"x", "y"}}}},
			{Value: &modelv1.TagValue_BinaryData{BinaryData: []byte("b")}},
		}}},
	}
	b, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var p wire.Point
	if err := wire.ParseElement(b, &p); err != nil {
		t.Fatal(err)
	}
	spec := Spec{
		{Family: 0, Tag: 0, Name: "ep"}, {Family: 0, Tag: 0, Name: "ep", Analyzer: "url"},
		{Family: 0, Tag: 1, Name: "n", Sorted: true}, {Family: 0, Tag: 2, Name: "arr"}, {Family: 0, Tag: 3, Name: "bin"},
		{Family: 0, Tag: 9, Name: "absent", Sorted: true}, {Family: 0, Tag: 0, Name: "strsorted", Sorted: true},
	}
	var got, sorted []string
	spec.WriteTerms(&p, func(s []byte) { got = append(got, string(s)) },
		func(s []byte, v int64) { sorted = append(sorted, fmt.Sprintf("%q=%d", s, v)) })
	wantSorted := []string{
		fmt.Sprintf("%q=7", SortSeries(nil, "n", SortInts)),
		fmt.Sprintf("%q=0", SortSeries(nil, "absent", SortNulls)),
		fmt.Sprintf("%q=0", SortSeries(nil, "strsorted", SortOther)),
	}
	if !slices.Equal(sorted, wantSorted) {
		t.Errorf("sorted\n got %q\nwant %q", sorted, wantSorted)
	}
	want := []string{
		string(Series(nil, "ep", KindStr, []byte("GET /api/users"))),
		string(TokenSeries(nil, "ep", "url", []byte("GET"))), // the url analyzer keeps case
		string(TokenSeries(nil, "ep", "url", []byte("api"))),
		string(TokenSeries(nil, "ep", "url", []byte("users"))),
		string(Series(nil, "n", KindInt, IntValue(nil, 7))),
		string(Series(nil, "arr", KindStrItem, []byte("x"))),
		string(Series(nil, "arr", KindStrItem, []byte("y"))),
		string(Series(nil, "strsorted", KindStr, []byte("GET /api/users"))),
	}
	if !slices.Equal(got, want) {
		t.Errorf("terms\n got %q\nwant %q", got, want)
	}
}

// Any bytes parse or fail with ErrMalformed, and a parsed spec encodes
// back to what was parsed.
func FuzzParseSpec(f *testing.F) {
	f.Add(Spec{{Family: 1, Tag: 2, Name: "a", Analyzer: "url", Sorted: false}, {Name: "b", Sorted: true}}.Append(nil))
	f.Add([]byte{specFormat})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%x): %v, not ErrMalformed", b, err)
			}
			return
		}
		if len(s) == 0 {
			return // an empty spec (no entries) encodes as nothing
		}
		again, err := Parse(s.Append(nil))
		if err != nil || !slices.Equal(again, s) {
			t.Fatalf("Parse(Append(%+v)) = %+v, %v", s, again, err)
		}
	})
}

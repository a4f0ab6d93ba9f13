package metrics

import (
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// describing records the metric names of every collector registered on it.
type describing struct {
	prometheus.Registerer
	names []string
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil && !slices.Contains(d.names, m[1]) {
			d.names = append(d.names, m[1])
		}
	}
	return d.Registerer.Register(c)
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// Every metric a role registers is in the catalog the reference is
// generated from: a new labelled metric with no series in catalogRole
// fails here instead of silently missing from docs/operation/metrics.md.
func TestMetricCatalogHasEveryRegisteredMetric(t *testing.T) {
	catalog, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range RoleNames {
		d := &describing{Registerer: prometheus.NewRegistry()}
		catalogRole(d, role)
		if len(d.names) == 0 {
			t.Fatalf("%s: no metrics described", role)
		}
		for _, name := range d.names {
			i := slices.IndexFunc(catalog, func(m Info) bool { return m.Name == name })
			if i < 0 || !slices.Contains(catalog[i].Roles, role) {
				t.Errorf("%s registers %s, the catalog does not list it for %s; give it a series in catalogRole", role, name, role)
			}
		}
	}
	if !slices.IsSortedFunc(catalog, func(a, b Info) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	}) {
		t.Error("catalog not sorted by name")
	}
	for _, m := range catalog {
		if m.Help == "" || m.Type == "" || m.Type == "untyped" {
			t.Errorf("%s: help %q, type %q", m.Name, m.Help, m.Type)
		}
	}
}

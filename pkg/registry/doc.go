// Package registry is the schema registry contract: groups and their
// members (streams, measures, index rules and bindings, TopN aggregations,
// traces, properties), stored with revisions and watched as a snapshot followed by
// ordered changes. Two implementations satisfy it: pkg/registry/etcd for a
// cluster and pkg/registry/local (Pebble in the data directory) for
// standalone. Validation of schema objects is pure Go and lives here, so both
// stores refuse exactly the same objects. See docs/design/registry.md.
package registry

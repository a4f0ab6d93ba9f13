// Package node is the live-node registry seen by banyand's roles.
//
// A data node announces itself through a Registrar for as long as it runs;
// liaisons follow the set of live nodes through a Watcher, which hands them a
// consistent snapshot first and then every change, one update at a time, on
// a single goroutine. Cluster mode implements both over etcd (package
// pkg/registry/etcd); standalone mode uses Local, which keeps the set in
// memory because a node's liveness is the process's own.
package node

// Package test holds banyand's integration tests: every role built in
// process from the same constructors the commands use, talking over real
// loopback gRPC, exercised through the BanyanDB-compatible public API.
package test

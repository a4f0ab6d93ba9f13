// Package api holds banyand's protobuf definitions (api/proto) and the tests
// that pin them to the BanyanDB v0.10 wire format (testdata holds the wire
// facts as a TSV). The generated Go lives next to each .proto file.
package api

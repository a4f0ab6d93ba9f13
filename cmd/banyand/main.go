// Command banyand is the write data plane of an observability database.
// See `banyand --help` and README.md.
package main

import (
	"os"

	"github.com/banyand-io/banyand/banyand/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Package run starts and stops the components of a banyand process.
//
// A role (liaison, storage, standalone) is a Group of components listed in
// dependency order: the metadata store before the schema cache, the storage
// engine before the subscriber server that writes to it. The Group wires the
// components' flags and validation into the command line, starts them in
// order, waits until the process is told to stop or a component fails, and
// then stops them in reverse order within one shutdown budget, reporting the
// ones that did not stop in time rather than hanging on them.
//
// Components opt into each lifecycle step by implementing the small
// interfaces in this package: FlagRegisterer, Validator, Starter, Service
// and Stopper. A component implements only what it needs.
package run

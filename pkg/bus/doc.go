// Package bus is standalone's queue: the in-process implementation of
// queue.Queue, joining the liaison's publishers to the storage listeners of
// the same process without a network hop.
//
// Each topic has one listener. A publisher coalesces the messages queued
// while the listener works into one queue.Batch and hands it to the
// listener as it is: the payload slices the publisher passed, no copy, no
// encoding, no wrapping. The batch is marked Local, so a listener may skip
// checks that only guard against a foreign or damaged sender (the liaison
// that built the messages validated them).
//
// The bus runs the same contract suite (pkg/queue/queuetest) as the gRPC
// publisher and subscriber, so the roles behave the same whether they share
// a process or not.
package bus

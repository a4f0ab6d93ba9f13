// Package bus is an in-process publish/subscribe bus.
//
// Standalone banyand runs the liaison and the storage roles in one process;
// the local queue joins them through a Bus instead of gRPC streams, so both
// roles keep talking to the same topic/listener model whether they share a
// process or not. The bus does no batching, buffering or retrying: it hands a
// message to the listeners subscribed to its topic and reports what they
// returned. Anything smarter (acks by id, batching, backpressure) belongs to the
// queue built on top of it.
package bus

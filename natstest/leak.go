package natstest

import "go.uber.org/goleak"

// IgnoreServerLeaks are goleak options for goroutines nats-server 2.15.2
// itself leaves behind:
//   - a cluster node shut down while it is still creating a stream replica
//     (which the server does in the background after the client's request
//     is answered) never stops that replica's file store, whose flush loop
//     and the store's shared clock goroutine then outlive the server;
//   - a server shut down while a stream sets up the consumer of one of its
//     sources (jetflow's input stream sources the timer stream) leaves the
//     goroutine awaiting the answer for up to 30 s (server/stream.go,
//     trySetupSourceConsumer).
//
// Use them in TestMain of packages that run servers:
//
//	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
func IgnoreServerLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*stream).trySetupSourceConsumer.func3"),
	}
}

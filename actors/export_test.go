package actors

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/leasekeeper"
)

// For the benchmarks' limits (package actors_test): trivial actors on the runtime the
// engine's actors run on, with the engine's request ids, so that the limit pays for
// neither a stack growth nor an id source the engine avoids.

// MailboxDispatcher is the dispatcher of the node's AccountActors.
func MailboxDispatcher() actor.Dispatcher { return mailboxDispatcher() }

// NewRequestID is the engine's request id source.
var NewRequestID = newRequestID

// FlushDue writes what the node's periodic flush writes now (ticket rows, protection
// states, the reports that are due) and waits for the write: BenchmarkFanout's rounds at
// the node's own pace (FLUSH=due), where Flush writes every report.
func (n *Node) FlushDue() error {
	res, err := n.system.Root.RequestFuture(n.e.writer, flushDue{}, time.Minute).Result()
	if err != nil {
		return fmt.Errorf("flush due: %w", err)
	}
	if done, ok := res.(leasekeeper.Flushed); ok && done.Err != nil {
		return fmt.Errorf("flush due: %w", done.Err)
	}
	return nil
}

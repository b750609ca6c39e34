package actors

import "github.com/asynkron/protoactor-go/actor"

// For the benchmarks' limits (package actors_test): trivial actors on the runtime the
// engine's actors run on, with the engine's request ids, so that the limit pays for
// neither a stack growth nor an id source the engine avoids.

// MailboxDispatcher is the dispatcher of the node's AccountActors.
func MailboxDispatcher() actor.Dispatcher { return mailboxDispatcher() }

// NewRequestID is the engine's request id source.
var NewRequestID = newRequestID

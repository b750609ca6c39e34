// Package fixleaks lists, for goleak, the goroutines quickfixgo v0.9.7 leaves behind for
// good when a session stops (broker/fix/FIX.md, "Known quickfixgo v0.9.7 behaviour"), so
// that every leak check that may see a FIX session ignores exactly those and nothing else.
package fixleaks

import "go.uber.org/goleak"

// Ignore returns the goleak options for quickfixgo's known leaks:
//   - the logon- and logout-timeout timers of a stopped session, blocked on an unbuffered
//     channel nobody reads any more;
//   - the connection's read loop, when a message arrived while its session stopped: it
//     blocks sending it to the session loop that has ended (closing the connection does
//     not unblock a channel send).
func Ignore() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/quickfixgo/quickfix.(*stateMachine).Connect.func1"),
		goleak.IgnoreAnyFunction("github.com/quickfixgo/quickfix.(*session).initiateLogoutInReplyTo.func1"),
		goleak.IgnoreTopFunction("github.com/quickfixgo/quickfix.readLoop"),
	}
}

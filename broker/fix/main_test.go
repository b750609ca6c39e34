package fix_test

import (
	"testing"

	"go.uber.org/goleak"
)

// quickfixgo v0.9.7 leaves the logon- and logout-timeout timers of a stopped session
// blocked on an unbuffered channel nobody reads any more (one or two goroutines per
// stopped initiator session). Those are ignored; nothing else is.
var quickfixTimers = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/quickfixgo/quickfix.(*stateMachine).Connect.func1"),
	goleak.IgnoreAnyFunction("github.com/quickfixgo/quickfix.(*session).initiateLogoutInReplyTo.func1"),
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, quickfixTimers...)
}

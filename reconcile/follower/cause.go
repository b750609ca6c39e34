package follower

// Cause is why a reconcile ran: the label of its metric and log line.
type Cause uint8

// Causes.
const (
	CauseNone        Cause = iota
	CauseStart             // the account was claimed or a feed attached
	CauseGap               // a master event was missed, or one arrived while not in step
	CauseEpoch             // an event of an unknown feed epoch
	CauseRestart           // a master feed restarted: events may be lost
	CauseGate              // the lease gate opened again on a dirty account
	CauseUnknown           // an order's outcome is unknown
	CausePeriodic          // the periodic repair
	CauseConfig            // the configuration changed
	CauseAgain             // something arrived during a reconcile that may predate it
	CauseOrderFailed       // an order failed without executing (disconnected, market closed)
	CauseProtection        // a stop-out started or ended
	CauseQuote             // a late copy waits for a current quote (the last: actors sizes its metric array by it)
)

var causeNames = [...]string{"", "start", "gap", "unknown_epoch", "feed_restart", "gate_reopened",
	"unknown_outcome", "periodic", "config", "again", "order_failed", "protection", "stale_quote"}

// String is the cause's label ("" for CauseNone).
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "unknown"
}

package bridge

// Method names (the "method" member of a request frame).
const (
	methodConnect       = "broker.connect"
	methodSessionClose  = "session.close"
	methodAccount       = "session.account"
	methodSymbols       = "session.symbols"
	methodPositions     = "session.positions"
	methodOpen          = "session.open"
	methodClosePosition = "session.close_position"
	methodModify        = "session.modify"
	methodSubscribe     = "session.subscribe"
	methodFence         = "session.fence"

	methodProvision        = "control.provision"
	methodMasterOpen       = "control.master_open"
	methodMasterModify     = "control.master_modify"
	methodMasterClose      = "control.master_close"
	methodAccountPositions = "control.account_positions"
	methodOrderLog         = "control.order_log"
	methodSetFaults        = "control.set_faults"
	methodSetOptions       = "control.set_options"
)

// isOrderMethod reports whether method sends an order, so that an interrupted call has an
// unknown outcome rather than being safe to resend. Master trades through the controller
// change an account too and count as orders.
func isOrderMethod(method string) bool {
	switch method {
	case methodOpen, methodClosePosition, methodModify,
		methodMasterOpen, methodMasterModify, methodMasterClose:
		return true
	}
	return false
}

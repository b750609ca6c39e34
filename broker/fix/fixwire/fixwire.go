// Package fixwire is the FIX 4.4 wire shared by the copier's FIX broker (broker/fix) and
// the simulator's FIX front (broker/sim/fixfront): message types, the standard and custom
// tags they use, value formats (prices, units, times), the mapping between broker error
// classes and what a reject carries, the dialects (which custom tags and messages a venue
// takes) and the stock FIX 4.4 dictionary a strict venue validates against. FIX.md beside
// broker/fix describes the flows.
package fixwire

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/quickfixgo/enum"
	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"

	"github.com/snapcopier/copier/broker"
)

// BeginString is the only FIX version spoken.
const BeginString = quickfix.BeginStringFIX44

// Message types used (tag 35).
const (
	MsgLogon                  = "A"
	MsgLogout                 = "5"
	MsgNewOrderSingle         = "D"
	MsgOrderCancelReplace     = "G"
	MsgOrderCancelRequest     = "F"
	MsgOrderCancelReject      = "9"
	MsgExecutionReport        = "8"
	MsgOrderStatusRequest     = "H"
	MsgRequestForPositions    = "AN"
	MsgRequestForPositionsAck = "AO"
	MsgPositionReport         = "AP"
	MsgSecurityListRequest    = "x"
	MsgSecurityList           = "y"
	MsgCollateralInquiry      = "BB"
	MsgCollateralReport       = "BA"
	MsgBusinessMessageReject  = "j"
	MsgReject                 = "3"
)

// msgTypeNames names the message types used, for errors and logs.
var msgTypeNames = map[string]string{
	MsgLogon: "Logon", MsgLogout: "Logout", MsgNewOrderSingle: "NewOrderSingle", MsgOrderCancelReplace: "OrderCancelReplaceRequest",
	MsgOrderCancelRequest: "OrderCancelRequest",
	MsgOrderCancelReject:  "OrderCancelReject", MsgExecutionReport: "ExecutionReport", MsgOrderStatusRequest: "OrderStatusRequest",
	MsgRequestForPositions: "RequestForPositions", MsgRequestForPositionsAck: "RequestForPositionsAck", MsgPositionReport: "PositionReport",
	MsgSecurityListRequest: "SecurityListRequest", MsgSecurityList: "SecurityList", MsgCollateralInquiry: "CollateralInquiry",
	MsgCollateralReport: "CollateralReport", MsgBusinessMessageReject: "BusinessMessageReject", MsgReject: "Reject",
}

// MsgTypeName names a message type: "NewOrderSingle (D)"; "a message" when mt is empty.
func MsgTypeName(mt string) string {
	if mt == "" {
		return "a message"
	}
	if n, ok := msgTypeNames[mt]; ok {
		return n + " (" + mt + ")"
	}
	return "message type " + mt
}

// RequestIDTag is the tag that identifies the request a message of type mt belongs to
// (0 for a type that is not a request of ours).
func RequestIDTag(mt string) quickfix.Tag {
	switch mt {
	case MsgNewOrderSingle, MsgOrderCancelReplace, MsgOrderCancelRequest, MsgOrderStatusRequest:
		return TagClOrdID
	case MsgRequestForPositions:
		return TagPosReqID
	case MsgSecurityListRequest:
		return TagSecurityReqID
	case MsgCollateralInquiry:
		return TagCollInquiryID
	}
	return 0
}

// BizRejectRetryable reports whether a BusinessRejectReason (380) says the venue cannot
// serve the request now rather than never: 4 application not available, 7 DeliverTo firm
// not available at this time.
func BizRejectRetryable(reason string) bool { return reason == "4" || reason == "7" }

// Standard tags not in the generated tag package under a short name, and cTrader's
// symbol tags.
const (
	TagSymbolName   quickfix.Tag = 1007 // cTrader: the symbol's name in a SecurityList
	TagSymbolDigits quickfix.Tag = 1008 // cTrader: price digits in a SecurityList
	TagMaxTradeVol  quickfix.Tag = 1140 // FIX 5.0 MaxTradeVol, used in 4.4 by venues
)

// Custom tags (the user-defined range 5000-9999). A real venue ignores or refuses the ones
// it does not know; the FIX broker never depends on them for safety.
const (
	TagLeaseEpoch   quickfix.Tag = 9001 // the sender's fencing token (broker.Order.Token)
	TagNodeID       quickfix.Tag = 9002 // the sending node, for the venue's order log
	TagDeadline     quickfix.Tag = 9003 // the order's absolute deadline (broker.Order.Deadline, UTCTimestamp)
	TagStopLoss     quickfix.Tag = 9010 // position stop-loss price (0 = none)
	TagTakeProfit   quickfix.Tag = 9011 // position take-profit price (0 = none)
	TagMagic        quickfix.Tag = 9012 // MetaTrader magic number
	TagComment      quickfix.Tag = 9013 // position comment (the venue may truncate it)
	TagWorstPrice   quickfix.Tag = 9014 // the worst fill an open accepts (broker.OpenRequest.WorstPrice; absent: none)
	TagOpenTime     quickfix.Tag = 9020 // position open time (UTCTimestamp)
	TagErrorCode    quickfix.Tag = 9030 // broker.Code of a reject
	TagErrorClass   quickfix.Tag = 9031 // broker error class of a reject, by name
	TagFeedSeq      quickfix.Tag = 9040 // per-subscription event sequence number
	TagFeedKind     quickfix.Tag = 9041 // broker.EventKind of a feed report
	TagBid          quickfix.Tag = 9060 // current bid in a SecurityList
	TagAsk          quickfix.Tag = 9061 // current ask in a SecurityList
	TagTradeAllowed quickfix.Tag = 9062 // Y/N in a SecurityList
	TagBalance      quickfix.Tag = 9070 // account balance in a CollateralReport
	TagLeverage     quickfix.Tag = 9072 // account leverage
	TagAccountMode  quickfix.Tag = 9073 // 1 hedging, 2 netting
)

// Re-exported standard tags, so both sides name them one way.
const (
	TagClOrdID            = tag.ClOrdID
	TagOrderID            = tag.OrderID
	TagExecID             = tag.ExecID
	TagExecType           = tag.ExecType
	TagOrdStatus          = tag.OrdStatus
	TagOrdRejReason       = tag.OrdRejReason
	TagText               = tag.Text
	TagSymbol             = tag.Symbol
	TagSide               = tag.Side
	TagOrderQty           = tag.OrderQty
	TagOrdType            = tag.OrdType
	TagTransactTime       = tag.TransactTime
	TagLastPx             = tag.LastPx
	TagLastQty            = tag.LastQty
	TagAvgPx              = tag.AvgPx
	TagCumQty             = tag.CumQty
	TagLeavesQty          = tag.LeavesQty
	TagPosMaintRptID      = tag.PosMaintRptID
	TagPossResend         = tag.PossResend
	TagPosReqID           = tag.PosReqID
	TagPosReqType         = tag.PosReqType
	TagSubReqType         = tag.SubscriptionRequestType
	TagTotNumReports      = tag.TotalNumPosReports
	TagPosReqResult       = tag.PosReqResult
	TagPosReqStatus       = tag.PosReqStatus
	TagLongQty            = tag.LongQty
	TagShortQty           = tag.ShortQty
	TagNoPositions        = tag.NoPositions
	TagPosType            = tag.PosType
	TagSettlPrice         = tag.SettlPrice
	TagSecurityReqID      = tag.SecurityReqID
	TagSecurityResponseID = tag.SecurityResponseID
	TagSecListReqTyp      = tag.SecurityListRequestType
	TagSecReqResult       = tag.SecurityRequestResult
	TagTotNoRelSym        = tag.TotNoRelatedSym
	TagNoRelatedSym       = tag.NoRelatedSym
	TagLastFragment       = tag.LastFragment
	TagContractMult       = tag.ContractMultiplier
	TagMinTradeVol        = tag.MinTradeVol
	TagRoundLot           = tag.RoundLot
	TagCollInquiryID      = tag.CollInquiryID
	TagCollRptID          = tag.CollRptID
	TagCollStatus         = tag.CollStatus
	TagAccount            = tag.Account
	TagCurrency           = tag.Currency
	TagTotalNetValue      = tag.TotalNetValue
	TagRefMsgType         = tag.RefMsgType
	TagBizRejRefID        = tag.BusinessRejectRefID
	TagBizRejReason       = tag.BusinessRejectReason
	TagRefSeqNum          = tag.RefSeqNum
	TagRefTagID           = tag.RefTagID
	TagSessionRejReason   = tag.SessionRejectReason
	TagMsgSeqNum          = tag.MsgSeqNum
	TagAccountType        = tag.AccountType
	TagClearingBizDate    = tag.ClearingBusinessDate
	TagUsername           = tag.Username
	TagPassword           = tag.Password
	TagOrigClOrdID        = tag.OrigClOrdID
	TagCxlRejReason       = tag.CxlRejReason
	TagCxlRejRespTo       = tag.CxlRejResponseTo
	TagTimeInForce        = tag.TimeInForce
	TagPrice              = tag.Price  // limit price (40=2)
	TagStopPx             = tag.StopPx // stop price (40=3)

	// RawDataLength (95) and RawData (96) of a Logon carry the venue's shared token (a
	// node-level secret like the bridge's, `copierd sim --token`), when it requires one.
	TagRawDataLength = tag.RawDataLength
	TagRawData       = tag.RawData
)

// Values of enumerated fields used on both sides.
const (
	SideBuy         = string(enum.Side_BUY)
	SideSell        = string(enum.Side_SELL)
	ExecTrade       = string(enum.ExecType_TRADE)
	ExecRejected    = string(enum.ExecType_REJECTED)
	ExecRestated    = string(enum.ExecType_RESTATED)
	ExecReplaced    = string(enum.ExecType_REPLACED)
	ExecOrderStatus = string(enum.ExecType_ORDER_STATUS)
	StatusFilled    = string(enum.OrdStatus_FILLED)
	StatusRejected  = string(enum.OrdStatus_REJECTED)
	StatusReplaced  = string(enum.OrdStatus_REPLACED)
	OrdTypeMarket   = string(enum.OrdType_MARKET)
	OrdTypeLimit    = string(enum.OrdType_LIMIT)
	OrdTypeStop     = string(enum.OrdType_STOP)
	TIFImmediate    = string(enum.TimeInForce_IMMEDIATE_OR_CANCEL)
	TIFGoodTillCxl  = string(enum.TimeInForce_GOOD_TILL_CANCEL)
	ExecNew         = string(enum.ExecType_NEW)
	ExecCanceled    = string(enum.ExecType_CANCELED)
	StatusNew       = string(enum.OrdStatus_NEW)
	StatusCanceled  = string(enum.OrdStatus_CANCELED)
	StatusExpired   = string(enum.OrdStatus_EXPIRED)
	// CxlRejUnknownOrder is the CxlRejReason (102) of a cancel or replace of an order the
	// venue does not know (any more); CxlRejOther (99) any other.
	CxlRejUnknownOrder = string(enum.CxlRejReason_UNKNOWN_ORDER)
	CxlRejOther        = string(enum.CxlRejReason_OTHER)
	// CxlRejToCancel and CxlRejToReplace are the CxlRejResponseTo (434) of an
	// OrderCancelReject: the refused message was an OrderCancelRequest (F) or an
	// OrderCancelReplaceRequest (G).
	CxlRejToCancel   = string(enum.CxlRejResponseTo_ORDER_CANCEL_REQUEST)
	CxlRejToReplace  = string(enum.CxlRejResponseTo_ORDER_CANCEL_REPLACE_REQUEST)
	SubSnapshot      = string(enum.SubscriptionRequestType_SNAPSHOT)
	SubUpdates       = string(enum.SubscriptionRequestType_SNAPSHOT_PLUS_UPDATES)
	SubUnsubscribe   = string(enum.SubscriptionRequestType_DISABLE_PREVIOUS_SNAPSHOT_PLUS_UPDATE_REQUEST)
	RejUnknownSymbol = string(enum.OrdRejReason_UNKNOWN_SYMBOL)
	RejExchClosed    = string(enum.OrdRejReason_EXCHANGE_CLOSED)
	RejDuplicate     = string(enum.OrdRejReason_DUPLICATE_ORDER)
	RejUnknownOrder  = string(enum.OrdRejReason_UNKNOWN_ORDER)
	RejOther         = string(enum.OrdRejReason_OTHER)
	PosResultValid   = string(enum.PosReqResult_VALID_REQUEST)
	PosResultNone    = string(enum.PosReqResult_NO_POSITIONS_FOUND_THAT_MATCH_CRITERIA)
	PosResultOther   = string(enum.PosReqResult_OTHER)
	PosStatusDone    = string(enum.PosReqStatus_COMPLETED)
	PosStatusReject  = string(enum.PosReqStatus_REJECTED)
)

// PosReqStatusEnded is the PosReqStatus (729) of an unsolicited RequestForPositionsAck
// that ends a subscription (the venue stopped it). A dialect value outside FIX's list.
const PosReqStatusEnded = "9"

// TimeLayout is the UTCTimestamp format written, with nanoseconds (readers accept any
// fraction).
const TimeLayout = "20060102-15:04:05.000000000"

// FormatTime writes t as a UTCTimestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a UTCTimestamp with or without a fraction.
func ParseTime(s string) (time.Time, error) {
	return time.Parse("20060102-15:04:05.999999999", s)
}

// FormatFloat writes a price or quantity exactly (shortest round-trip form).
func FormatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// ParseFloat reads a price or quantity.
func ParseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// ToUnits converts lots to the units FIX quantities are in (cTrader: 1 lot of EURUSD is
// 100000 units), rounded to a millionth of a unit against float noise.
func ToUnits(lots, contractSize float64) float64 {
	return math.Round(lots*contractSize*1e6) / 1e6
}

// ToLots converts units back to lots, rounded to 1e-8 lot.
func ToLots(units, contractSize float64) float64 {
	if contractSize <= 0 {
		return 0
	}
	return math.Round(units/contractSize*1e8) / 1e8
}

// SideString is the FIX Side of a broker side.
func SideString(s broker.Side) string {
	if s == broker.Sell {
		return SideSell
	}
	return SideBuy
}

// ParseSide reads a FIX Side; ok is false for anything but buy or sell.
func ParseSide(s string) (broker.Side, bool) {
	switch s {
	case SideBuy:
		return broker.Buy, true
	case SideSell:
		return broker.Sell, true
	}
	return 0, false
}

// ClassName names a broker error class on the wire ("" for nil or unknown): the
// broker's own names (broker.ClassName).
func ClassName(class error) string { return broker.ClassName(class) }

// ClassByName is the inverse of ClassName (nil for an unknown name).
func ClassByName(name string) error { return broker.ClassByName(name) }

// ClassOfCode is the class of a broker return code (nil when the code is not known).
func ClassOfCode(c broker.Code) error {
	switch c {
	case broker.CodeRequote, broker.CodePriceChanged, broker.CodeOffQuotes, broker.CodeTooManyRequests, broker.CodeServerBusy:
		return broker.ErrRetryable
	case broker.CodeTimeout:
		return broker.ErrUnknownOutcome
	case broker.CodeInvalidVolume, broker.CodeInvalidStops, broker.CodeTradeDisabled, broker.CodeNoMoney,
		broker.CodeInvalidRequest, broker.CodeAuthFailed:
		return broker.ErrPermanent
	case broker.CodeMarketClosed:
		return broker.ErrMarketClosed
	case broker.CodeNoConnection:
		return broker.ErrDisconnected
	case broker.CodeFencedToken:
		return broker.ErrFenced
	case broker.CodeExpired:
		return broker.ErrExpired
	}
	return nil
}

// RejReason is the OrdRejReason (103) a venue gives for a classified error.
func RejReason(err error) string {
	var code broker.Code
	if te, ok := err.(*broker.TradeError); ok {
		code = te.Code
	}
	switch {
	case code == broker.CodeMarketClosed:
		return RejExchClosed
	case code == broker.CodeInvalidRequest && strings.Contains(strings.ToLower(err.Error()), "symbol"):
		return RejUnknownSymbol
	case code == broker.CodeInvalidRequest:
		return RejUnknownOrder
	}
	return RejOther
}

// ErrorFrom classifies a reject: the dialect's class and code tags when present (our
// venue), else the code alone, else the standard OrdRejReason and the text (any venue).
// A reject that says nothing classifiable is permanent: resending it would fail again.
func ErrorFrom(className, code, rejReason, text string) error {
	c, _ := strconv.Atoi(code)
	if class := ClassByName(className); class != nil {
		return broker.NewError(class, broker.Code(c), "%s", text)
	}
	if class := ClassOfCode(broker.Code(c)); class != nil {
		return broker.NewError(class, broker.Code(c), "%s", text)
	}
	lower := strings.ToLower(text)
	switch {
	case rejReason == RejExchClosed || strings.Contains(lower, "market closed") || strings.Contains(lower, "market is closed"):
		return broker.NewError(broker.ErrMarketClosed, broker.CodeMarketClosed, "%s", text)
	case rejReason == RejUnknownSymbol:
		return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "unknown symbol: %s", text)
	case strings.Contains(lower, "requote") || strings.Contains(lower, "off quotes") || strings.Contains(lower, "busy"):
		return broker.NewError(broker.ErrRetryable, broker.CodeRequote, "%s", text)
	case strings.Contains(lower, "not enough money") || strings.Contains(lower, "insufficient"):
		return broker.NewError(broker.ErrPermanent, broker.CodeNoMoney, "%s", text)
	}
	return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "rejected (reason %s): %s", rejReason, text)
}

// SymbolGroup is the template of the NoRelatedSym (146) group of a SecurityList: one entry
// per symbol, opened by Symbol (55).
var SymbolGroup = quickfix.GroupTemplate{
	quickfix.GroupElement(TagSymbol), quickfix.GroupElement(TagSymbolName), quickfix.GroupElement(TagSymbolDigits),
	quickfix.GroupElement(TagContractMult), quickfix.GroupElement(TagMinTradeVol), quickfix.GroupElement(TagMaxTradeVol),
	quickfix.GroupElement(TagRoundLot), quickfix.GroupElement(TagBid), quickfix.GroupElement(TagAsk),
	quickfix.GroupElement(TagTradeAllowed),
}

// GroupEntries reads the entries of a repeating group from a raw message: counter is the
// NoXxx tag, first the tag that opens each entry, members the tags an entry may hold.
// Sessions without a data dictionary do not parse groups; this reads them in order.
func GroupEntries(raw string, counter, first quickfix.Tag, members []quickfix.Tag) []map[quickfix.Tag]string {
	in := map[quickfix.Tag]bool{}
	for _, t := range members {
		in[t] = true
	}
	var out []map[quickfix.Tag]string
	inGroup := false
	for _, f := range strings.Split(raw, "\x01") {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		t := quickfix.Tag(n)
		switch {
		case t == counter:
			inGroup = true
		case inGroup && t == first:
			out = append(out, map[quickfix.Tag]string{t: v})
		case inGroup && in[t] && len(out) > 0:
			out[len(out)-1][t] = v
		case inGroup:
			inGroup = false
		}
	}
	return out
}

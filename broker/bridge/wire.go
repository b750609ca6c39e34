package bridge

import (
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
)

// The wire types below are the JSON shapes PROTOCOL.md documents. They are decoupled from
// the broker package's Go types on purpose: the protocol is language-neutral and must not
// change when a Go field is renamed. Enumerations travel as their integer values, so a
// value is carried unchanged even when it is invalid and the far side rejects it.

// wireCredentials are the params of broker.connect.
type wireCredentials struct {
	Login    string `json:"login"`
	Server   string `json:"server"`
	Password string `json:"password"`
	// FIX is the account's FIX session settings, for a server whose trade server speaks
	// FIX (broker/fix); absent when the account has none. Older servers ignore it.
	FIX *wireFIXSession `json:"fix,omitempty"`
}

// wireFIXSession is broker.FIXSession on the wire; empty fields are omitted.
type wireFIXSession struct {
	SenderCompID string          `json:"sender_comp_id,omitempty"`
	SenderSubID  string          `json:"sender_sub_id,omitempty"`
	TargetCompID string          `json:"target_comp_id,omitempty"`
	TargetSubID  string          `json:"target_sub_id,omitempty"`
	Username     string          `json:"username,omitempty"`
	Dialect      string          `json:"dialect,omitempty"`
	Symbols      []wireFIXSymbol `json:"symbols,omitempty"`
	// PositionMode is "netting" or "hedging" (a setting's text, like the dialect).
	PositionMode string `json:"position_mode,omitempty"`
}

// wireFIXSymbol is broker.FIXSymbol on the wire: an entry of a configured symbol list
// (broker/fix's list file has the same names).
type wireFIXSymbol = broker.SymbolEntry

func toWireCredentials(c broker.Credentials) wireCredentials {
	w := wireCredentials{Login: c.Login, Server: c.Server, Password: c.Password}
	if f := c.FIX; !f.IsZero() {
		w.FIX = &wireFIXSession{SenderCompID: f.SenderCompID, SenderSubID: f.SenderSubID,
			TargetCompID: f.TargetCompID, TargetSubID: f.TargetSubID, Username: f.Username, Dialect: f.Dialect,
			PositionMode: f.PositionMode}
		for _, s := range f.Symbols {
			w.FIX.Symbols = append(w.FIX.Symbols, s.Entry())
		}
	}
	return w
}

func (w wireCredentials) credentials() broker.Credentials {
	c := broker.Credentials{Login: w.Login, Server: w.Server, Password: w.Password}
	if f := w.FIX; f != nil {
		c.FIX = broker.FIXSession{SenderCompID: f.SenderCompID, SenderSubID: f.SenderSubID,
			TargetCompID: f.TargetCompID, TargetSubID: f.TargetSubID, Username: f.Username, Dialect: f.Dialect,
			PositionMode: f.PositionMode}
		for _, s := range f.Symbols {
			c.FIX.Symbols = append(c.FIX.Symbols, s.Symbol())
		}
	}
	return c
}

type wireAccount struct {
	Login    string  `json:"login"`
	Currency string  `json:"currency"`
	Balance  float64 `json:"balance"`
	Equity   float64 `json:"equity"`
	Leverage int     `json:"leverage"`
	Mode     int8    `json:"mode"`
	// EquityUnknown: broker.AccountInfo.EquityUnknown (absent: known, as from an older peer).
	EquityUnknown bool `json:"equity_unknown,omitempty"`
}

func toWireAccount(a broker.AccountInfo) wireAccount {
	return wireAccount{Login: a.Login, Currency: a.Currency, Balance: a.Balance, Equity: a.Equity,
		Leverage: a.Leverage, Mode: int8(a.Mode), EquityUnknown: a.EquityUnknown}
}

func (w wireAccount) toBroker() broker.AccountInfo {
	return broker.AccountInfo{Login: w.Login, Currency: w.Currency, Balance: w.Balance, Equity: w.Equity,
		Leverage: w.Leverage, Mode: broker.AccountMode(w.Mode), EquityUnknown: w.EquityUnknown}
}

type wireSymbol struct {
	Name         string  `json:"name"`
	ContractSize float64 `json:"contract_size"`
	MinLot       float64 `json:"min_lot"`
	MaxLot       float64 `json:"max_lot"`
	LotStep      float64 `json:"lot_step"`
	Digits       int     `json:"digits"`
	Point        float64 `json:"point"`
	TradeAllowed bool    `json:"trade_allowed"`
	Bid          float64 `json:"bid"`
	Ask          float64 `json:"ask"`
}

func toWireSymbols(specs []broker.SymbolSpec) []wireSymbol {
	out := make([]wireSymbol, len(specs))
	for i, s := range specs {
		out[i] = wireSymbol{Name: s.Name, ContractSize: s.ContractSize, MinLot: s.MinLot, MaxLot: s.MaxLot,
			LotStep: s.LotStep, Digits: s.Digits, Point: s.Point, TradeAllowed: s.TradeAllowed, Bid: s.Bid, Ask: s.Ask}
	}
	return out
}

func fromWireSymbols(ws []wireSymbol) []broker.SymbolSpec {
	out := make([]broker.SymbolSpec, len(ws))
	for i, w := range ws {
		out[i] = broker.SymbolSpec{Name: w.Name, ContractSize: w.ContractSize, MinLot: w.MinLot, MaxLot: w.MaxLot,
			LotStep: w.LotStep, Digits: w.Digits, Point: w.Point, TradeAllowed: w.TradeAllowed, Bid: w.Bid, Ask: w.Ask}
	}
	return out
}

type wirePosition struct {
	Ticket    int64     `json:"ticket"`
	Symbol    string    `json:"symbol"`
	Side      int8      `json:"side"`
	Volume    float64   `json:"volume"`
	OpenPrice float64   `json:"open_price"`
	SL        float64   `json:"sl"`
	TP        float64   `json:"tp"`
	Magic     int64     `json:"magic"`
	Comment   string    `json:"comment"`
	OpenTime  time.Time `json:"open_time"`
}

func toWirePosition(p broker.Position) wirePosition {
	return wirePosition{Ticket: p.Ticket, Symbol: p.Symbol, Side: int8(p.Side), Volume: p.Volume,
		OpenPrice: p.OpenPrice, SL: p.SL, TP: p.TP, Magic: p.Magic, Comment: p.Comment, OpenTime: p.OpenTime}
}

func (w wirePosition) toBroker() broker.Position {
	return broker.Position{Ticket: w.Ticket, Symbol: w.Symbol, Side: broker.Side(w.Side), Volume: w.Volume,
		OpenPrice: w.OpenPrice, SL: w.SL, TP: w.TP, Magic: w.Magic, Comment: w.Comment, OpenTime: w.OpenTime}
}

func toWirePositions(ps []broker.Position) []wirePosition {
	out := make([]wirePosition, len(ps))
	for i, p := range ps {
		out[i] = toWirePosition(p)
	}
	return out
}

func fromWirePositions(ws []wirePosition) []broker.Position {
	out := make([]broker.Position, len(ws))
	for i, w := range ws {
		out[i] = w.toBroker()
	}
	return out
}

// wireOrder is the part every order request carries.
type wireOrder struct {
	RequestID uuid.UUID `json:"request_id"`
	Token     int64     `json:"token"`
	Node      string    `json:"node"`
	// Deadline is an absolute instant (RFC 3339, nanoseconds); absent: none.
	Deadline time.Time `json:"deadline,omitzero"`
}

func toWireOrder(o broker.Order) wireOrder {
	return wireOrder{RequestID: o.RequestID, Token: o.Token, Node: o.Node, Deadline: o.Deadline}
}

func (w wireOrder) toBroker() broker.Order {
	return broker.Order{RequestID: w.RequestID, Token: w.Token, Node: w.Node, Deadline: w.Deadline}
}

type wireOpen struct {
	wireOrder
	Symbol  string  `json:"symbol"`
	Side    int8    `json:"side"`
	Type    int8    `json:"type"`
	Volume  float64 `json:"volume"`
	Price   float64 `json:"price"`
	SL      float64 `json:"sl"`
	TP      float64 `json:"tp"`
	Magic   int64   `json:"magic"`
	Comment string  `json:"comment"`
	// WorstPrice is optional: absent (or 0) for a fill at any price.
	WorstPrice float64 `json:"worst_price,omitempty"`
}

func toWireOpen(r broker.OpenRequest) wireOpen {
	return wireOpen{wireOrder: toWireOrder(r.Order), Symbol: r.Symbol, Side: int8(r.Side), Type: int8(r.Type),
		Volume: r.Volume, Price: r.Price, SL: r.SL, TP: r.TP, Magic: r.Magic, Comment: r.Comment, WorstPrice: r.WorstPrice}
}

func (w wireOpen) toBroker() broker.OpenRequest {
	return broker.OpenRequest{Order: w.wireOrder.toBroker(), Symbol: w.Symbol, Side: broker.Side(w.Side),
		Type: broker.OrderType(w.Type), Volume: w.Volume, Price: w.Price, SL: w.SL, TP: w.TP, Magic: w.Magic,
		Comment: w.Comment, WorstPrice: w.WorstPrice}
}

type wireClose struct {
	wireOrder
	Ticket int64   `json:"ticket"`
	Volume float64 `json:"volume"`
}

func toWireClose(r broker.CloseRequest) wireClose {
	return wireClose{wireOrder: toWireOrder(r.Order), Ticket: r.Ticket, Volume: r.Volume}
}

func (w wireClose) toBroker() broker.CloseRequest {
	return broker.CloseRequest{Order: w.wireOrder.toBroker(), Ticket: w.Ticket, Volume: w.Volume}
}

type wireModify struct {
	wireOrder
	Ticket int64   `json:"ticket"`
	SL     float64 `json:"sl"`
	TP     float64 `json:"tp"`
}

func toWireModify(r broker.ModifyRequest) wireModify {
	return wireModify{wireOrder: toWireOrder(r.Order), Ticket: r.Ticket, SL: r.SL, TP: r.TP}
}

func (w wireModify) toBroker() broker.ModifyRequest {
	return broker.ModifyRequest{Order: w.wireOrder.toBroker(), Ticket: w.Ticket, SL: w.SL, TP: w.TP}
}

type wireOrderResult struct {
	Ticket     int64      `json:"ticket"`
	Price      float64    `json:"price"`
	Volume     float64    `json:"volume"`
	ServerTime time.Time  `json:"server_time"`
	Funds      *wireFunds `json:"funds,omitempty"`
}

// wireFunds is broker.Funds on the wire: absent when the server does not say them.
type wireFunds struct {
	Balance float64 `json:"balance"`
	Equity  float64 `json:"equity"`
}

// toWireFunds is f's wire form, nil when f is unknown or not a number JSON can carry (a
// result must never become unencodable for a figure beside it).
func toWireFunds(f broker.Funds) *wireFunds {
	if !f.Known || !finite(f.Balance) || !finite(f.Equity) {
		return nil
	}
	return &wireFunds{Balance: f.Balance, Equity: f.Equity}
}

func (w *wireFunds) toBroker() broker.Funds {
	if w == nil {
		return broker.Funds{}
	}
	return broker.Funds{Known: true, Balance: w.Balance, Equity: w.Equity}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func toWireOrderResult(r broker.OrderResult) wireOrderResult {
	return wireOrderResult{Ticket: r.Ticket, Price: r.Price, Volume: r.Volume, ServerTime: r.ServerTime, Funds: toWireFunds(r.Funds)}
}

func (w wireOrderResult) toBroker() broker.OrderResult {
	return broker.OrderResult{Ticket: w.Ticket, Price: w.Price, Volume: w.Volume, ServerTime: w.ServerTime, Funds: w.Funds.toBroker()}
}

// wireSubscribe is the params of session.subscribe: the subscription id the client chose.
type wireSubscribe struct {
	Sub uint64 `json:"sub"`
}

type wireEvent struct {
	Login      string       `json:"login"`
	Epoch      int64        `json:"epoch"`
	Seq        int64        `json:"seq"`
	Kind       int8         `json:"kind"`
	Position   wirePosition `json:"position"`
	ServerTime time.Time    `json:"server_time"`
	Funds      *wireFunds   `json:"funds,omitempty"`
}

func toWireEvent(e broker.Event) wireEvent {
	return wireEvent{Login: e.Login, Epoch: e.Epoch, Seq: e.Seq, Kind: int8(e.Kind),
		Position: toWirePosition(e.Position), ServerTime: e.ServerTime, Funds: toWireFunds(e.Funds)}
}

func (w wireEvent) toBroker() broker.Event {
	return broker.Event{Login: w.Login, Epoch: w.Epoch, Seq: w.Seq, Kind: broker.EventKind(w.Kind),
		Position: w.Position.toBroker(), ServerTime: w.ServerTime, Funds: w.Funds.toBroker()}
}

package bridge

import (
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
)

type wireAccountSpec struct {
	Login        string  `json:"login"`
	Password     string  `json:"password"`
	Currency     string  `json:"currency"`
	Balance      float64 `json:"balance"`
	Leverage     int     `json:"leverage"`
	Mode         int8    `json:"mode"`
	SymbolSuffix string  `json:"symbol_suffix"`
}

func toWireAccountSpec(s broker.AccountSpec) wireAccountSpec {
	return wireAccountSpec{Login: s.Login, Password: s.Password, Currency: s.Currency, Balance: s.Balance,
		Leverage: s.Leverage, Mode: int8(s.Mode), SymbolSuffix: s.SymbolSuffix}
}

func (w wireAccountSpec) toBroker() broker.AccountSpec {
	return broker.AccountSpec{Login: w.Login, Password: w.Password, Currency: w.Currency, Balance: w.Balance,
		Leverage: w.Leverage, Mode: broker.AccountMode(w.Mode), SymbolSuffix: w.SymbolSuffix}
}

type wireMasterOpen struct {
	Login   string  `json:"login"`
	Symbol  string  `json:"symbol"`
	Side    int8    `json:"side"`
	Volume  float64 `json:"volume"`
	SL      float64 `json:"sl"`
	TP      float64 `json:"tp"`
	Magic   int64   `json:"magic"`
	Comment string  `json:"comment"`
}

func toWireMasterOpen(login string, r broker.MasterOpenRequest) wireMasterOpen {
	return wireMasterOpen{Login: login, Symbol: r.Symbol, Side: int8(r.Side), Volume: r.Volume, SL: r.SL, TP: r.TP,
		Magic: r.Magic, Comment: r.Comment}
}

func (w wireMasterOpen) toBroker() broker.MasterOpenRequest {
	return broker.MasterOpenRequest{Symbol: w.Symbol, Side: broker.Side(w.Side), Volume: w.Volume, SL: w.SL,
		TP: w.TP, Magic: w.Magic, Comment: w.Comment}
}

type wireMasterModify struct {
	Login  string  `json:"login"`
	Ticket int64   `json:"ticket"`
	SL     float64 `json:"sl"`
	TP     float64 `json:"tp"`
}

type wireMasterClose struct {
	Login  string  `json:"login"`
	Ticket int64   `json:"ticket"`
	Volume float64 `json:"volume"`
}

// wireLogin is the params of control.account_positions.
type wireLogin struct {
	Login string `json:"login"`
}

type wireOrderLogQuery struct {
	AfterSeq int64 `json:"after_seq"`
	Limit    int   `json:"limit"`
}

type wireOrderLogEntry struct {
	Seq        int64     `json:"seq"`
	ServerTime time.Time `json:"server_time"`
	Login      string    `json:"login"`
	RequestID  uuid.UUID `json:"request_id"`
	Token      int64     `json:"token"`
	Node       string    `json:"node"`
	Deadline   time.Time `json:"deadline,omitzero"`
	Op         int8      `json:"op"`
	Symbol     string    `json:"symbol"`
	Side       int8      `json:"side"`
	Volume     float64   `json:"volume"`
	Ticket     int64     `json:"ticket"`
	Magic      int64     `json:"magic"`
	Comment    string    `json:"comment"`
	Executed   bool      `json:"executed"`
	Duplicate  bool      `json:"duplicate"`
	Result     int       `json:"result"`
	Error      string    `json:"error"`
	Master     bool      `json:"master"`
}

func toWireOrderLog(es []broker.OrderLogEntry) []wireOrderLogEntry {
	out := make([]wireOrderLogEntry, len(es))
	for i, e := range es {
		out[i] = wireOrderLogEntry{Seq: e.Seq, ServerTime: e.ServerTime, Login: e.Login, RequestID: e.RequestID,
			Token: e.Token, Node: e.Node, Deadline: e.Deadline, Op: int8(e.Op), Symbol: e.Symbol, Side: int8(e.Side), Volume: e.Volume,
			Ticket: e.Ticket, Magic: e.Magic, Comment: e.Comment, Executed: e.Executed, Duplicate: e.Duplicate,
			Result: int(e.Result), Error: e.Error, Master: e.Master}
	}
	return out
}

func fromWireOrderLog(ws []wireOrderLogEntry) []broker.OrderLogEntry {
	out := make([]broker.OrderLogEntry, len(ws))
	for i, w := range ws {
		out[i] = broker.OrderLogEntry{Seq: w.Seq, ServerTime: w.ServerTime, Login: w.Login, RequestID: w.RequestID,
			Token: w.Token, Node: w.Node, Deadline: w.Deadline, Op: broker.OrderOp(w.Op), Symbol: w.Symbol, Side: broker.Side(w.Side),
			Volume: w.Volume, Ticket: w.Ticket, Magic: w.Magic, Comment: w.Comment, Executed: w.Executed,
			Duplicate: w.Duplicate, Result: broker.Code(w.Result), Error: w.Error, Master: w.Master}
	}
	return out
}

type wireFaults struct {
	Login          string  `json:"login"`
	LatencyNS      int64   `json:"latency_ns"`
	RequoteRate    float64 `json:"requote_rate"`
	TimeoutRate    float64 `json:"timeout_rate"`
	DisconnectRate float64 `json:"disconnect_rate"`
	DropEventRate  float64 `json:"drop_event_rate"`
}

func toWireFaults(login string, f broker.Faults) wireFaults {
	return wireFaults{Login: login, LatencyNS: int64(f.Latency), RequoteRate: f.RequoteRate,
		TimeoutRate: f.TimeoutRate, DisconnectRate: f.DisconnectRate, DropEventRate: f.DropEventRate}
}

func (w wireFaults) toBroker() broker.Faults {
	return broker.Faults{Latency: time.Duration(w.LatencyNS), RequoteRate: w.RequoteRate,
		TimeoutRate: w.TimeoutRate, DisconnectRate: w.DisconnectRate, DropEventRate: w.DropEventRate}
}

type wireServerOptions struct {
	EnforceTokens bool `json:"enforce_tokens"`
	DedupRequests bool `json:"dedup_requests"`
}

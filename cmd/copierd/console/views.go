package console

import (
	"encoding/json"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// accountJSON is an account in the API. It never carries the credentials.
type accountJSON struct {
	ID             int64  `json:"id"`
	Platform       string `json:"platform"`
	Role           string `json:"role"`
	Enabled        bool   `json:"enabled"`
	Login          string `json:"login"`
	Server         string `json:"server"`
	HasCredentials bool   `json:"has_credentials"`
	// CloseOnly is the follower's own close-only mode ("" copies normally).
	CloseOnly string `json:"close_only"`
	// FIX is the account's FIX session settings (empty fields omitted).
	FIX store.FIXSession `json:"fix"`
	// Owner is the node holding the lease (null when free). LeaseUntil is by the
	// database's clock; LeaseLeftSeconds is relative to the database's now() (negative:
	// expired).
	Owner            *string    `json:"owner"`
	LeaseUntil       *time.Time `json:"lease_until"`
	LeaseLeftSeconds *float64   `json:"lease_left_seconds"`
	Epoch            int64      `json:"epoch"`
	ConfigVersion    int64      `json:"config_version"`
	Status           string     `json:"status"`
	LastError        string     `json:"last_error"`
	Balance          *float64   `json:"balance"`
	Equity           *float64   `json:"equity"`
	StatusAt         *time.Time `json:"status_at"`
	LastCopyAt       *time.Time `json:"last_copy_at"`
	CreatedAt        time.Time  `json:"created_at"`
	// Live is this process's node's own view, when it runs the account.
	Live *liveJSON `json:"live"`
}

// liveJSON is an account as the AccountActor that runs it sees it.
type liveJSON struct {
	Phase    string  `json:"phase"`
	GateOpen bool    `json:"gate_open"`
	Epoch    int64   `json:"epoch"`
	Balance  float64 `json:"balance"`
	Equity   float64 `json:"equity"`
	// EquityUnknown: the trade server does not say the balance and equity (both 0 here).
	EquityUnknown bool       `json:"equity_unknown,omitempty"`
	Positions     int        `json:"positions"`
	LastCopy      *time.Time `json:"last_copy"`
	LagMS         *float64   `json:"lag_ms"`
	LastError     string     `json:"last_error"`
	Crashes       int        `json:"crashes"`
	Reconciles    int        `json:"reconciles"`
	Dropped       int        `json:"dropped"`
	// StopOut is the stop-out in force, or the equity protection that cannot be evaluated
	// (equity unknown: no new copies); absent while copying.
	StopOut string `json:"stop_out,omitempty"`
}

// journalJSON is one entry of an account's copy journal.
type journalJSON struct {
	Time         time.Time `json:"time"`
	Action       string    `json:"action"`
	MasterTicket int64     `json:"master_ticket"`
	Ticket       int64     `json:"ticket"`
	Result       string    `json:"result"`
	LatencyMS    float64   `json:"latency_ms"`
	Link         int64     `json:"link_id,omitempty"`
	// The latency split of an order copied from a master event (absent for a reconcile's):
	// master server time → received by the node, → order sent, → executed (broker's clock).
	FeedMS   *float64 `json:"feed_ms,omitempty"`
	NodeMS   *float64 `json:"node_ms,omitempty"`
	BrokerMS *float64 `json:"broker_ms,omitempty"`
	// SlippagePoints is the fill against the master's open price, worse positive (opens
	// copied from the master's open only).
	SlippagePoints *float64 `json:"slippage_points,omitempty"`
	// Skip is why a master position was not copied (result "skipped"): a skip reason of
	// reconcile/README.md.
	Skip string `json:"skip,omitempty"`
}

// qualityJSON is one link's copy quality over its recent copies (the owning node's memory).
type qualityJSON struct {
	Link            int64   `json:"link_id"`
	Copies          int     `json:"copies"`
	SlippageSamples int     `json:"slippage_samples"`
	SlippageP50     float64 `json:"slippage_p50_points"`
	SlippageP95     float64 `json:"slippage_p95_points"`
	TotalP50MS      float64 `json:"latency_p50_ms"`
	TotalP95MS      float64 `json:"latency_p95_ms"`
	FeedP50MS       float64 `json:"feed_p50_ms"`
	FeedP95MS       float64 `json:"feed_p95_ms"`
	NodeP50MS       float64 `json:"node_p50_ms"`
	NodeP95MS       float64 `json:"node_p95_ms"`
	BrokerP50MS     float64 `json:"broker_p50_ms"`
	BrokerP95MS     float64 `json:"broker_p95_ms"`
}

func newQualityJSON(qs []actors.LinkQuality) []qualityJSON {
	out := make([]qualityJSON, 0, len(qs))
	for _, q := range qs {
		out = append(out, qualityJSON{Link: q.Link, Copies: q.Copies, SlippageSamples: q.SlippageSamples,
			SlippageP50: q.SlippageP50, SlippageP95: q.SlippageP95,
			TotalP50MS: ms(q.TotalP50), TotalP95MS: ms(q.TotalP95), FeedP50MS: ms(q.FeedP50), FeedP95MS: ms(q.FeedP95),
			NodeP50MS: ms(q.NodeP50), NodeP95MS: ms(q.NodeP95), BrokerP50MS: ms(q.BrokerP50), BrokerP95MS: ms(q.BrokerP95)})
	}
	return out
}

func tptr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newAccountJSON(a store.AccountRow, live *actors.AccountStatus) accountJSON {
	j := accountJSON{ID: a.ID, Platform: a.Platform, Role: string(a.Role), Enabled: a.Enabled, Login: a.Login, Server: a.Server,
		HasCredentials: a.HasCredentials, CloseOnly: a.CloseOnly, FIX: a.FIX, Epoch: a.Epoch, ConfigVersion: a.ConfigVersion, Status: a.Status, LastError: a.LastError,
		Balance: a.Balance, Equity: a.Equity, StatusAt: tptr(a.StatusAt), LastCopyAt: tptr(a.LastCopyAt), CreatedAt: a.CreatedAt,
		LeaseUntil: tptr(a.LeaseUntil)}
	if a.NodeID != "" {
		owner := a.NodeID
		j.Owner = &owner
	}
	if !a.LeaseUntil.IsZero() {
		left := a.LeaseLeft.Seconds()
		j.LeaseLeftSeconds = &left
	}
	if live != nil {
		j.Live = newLiveJSON(*live)
	}
	return j
}

func newLiveJSON(s actors.AccountStatus) *liveJSON {
	l := &liveJSON{Phase: s.Phase.String(), GateOpen: s.GateOpen, Epoch: s.Epoch, Balance: s.Balance, Equity: s.Equity,
		EquityUnknown: s.EquityUnknown, Positions: s.Positions, LastCopy: tptr(s.LastCopy), LastError: s.LastError, Crashes: s.Crashes,
		Reconciles: s.Reconciles, Dropped: s.Dropped, StopOut: s.StopOut}
	if !s.LastCopy.IsZero() {
		lag := ms(s.LastLag)
		l.LagMS = &lag
	}
	return l
}

func newJournalJSON(js []actors.JournalEntry) []journalJSON {
	out := make([]journalJSON, 0, len(js))
	for i := len(js) - 1; i >= 0; i-- { // newest first
		e := js[i]
		j := journalJSON{Time: e.Time, Action: e.Action(), MasterTicket: e.MasterTicket, Ticket: e.Ticket,
			Result: e.Result, LatencyMS: ms(e.Latency), Link: e.Link}
		if e.Skip != 0 {
			j.Skip = e.Skip.String()
		}
		if e.HasQuality {
			f, n, b := ms(e.Quality.Feed), ms(e.Quality.Node), ms(e.Quality.Broker)
			j.FeedMS, j.NodeMS, j.BrokerMS = &f, &n, &b
			if e.Quality.HasSlippage {
				s := e.Quality.Slippage
				j.SlippagePoints = &s
			}
		}
		out = append(out, j)
	}
	return out
}

// liveIndex maps account id → the node's status of it.
func liveIndex(snap actors.Snapshot) map[int64]*actors.AccountStatus {
	m := make(map[int64]*actors.AccountStatus, len(snap.Accounts))
	for i := range snap.Accounts {
		m[snap.Accounts[i].ID] = &snap.Accounts[i]
	}
	return m
}

// linkJSON is a link in the API.
type linkJSON struct {
	ID            int64  `json:"id"`
	MasterID      int64  `json:"master_id"`
	FollowerID    int64  `json:"follower_id"`
	MasterLogin   string `json:"master_login"`
	FollowerLogin string `json:"follower_login"`
	Enabled       bool   `json:"enabled"`
	Magic         int64  `json:"magic"`
	Version       int64  `json:"version"`
	// Settings is the document as stored; EffectiveSettings is it with every default
	// filled in (null when it does not parse, with SettingsError saying why).
	Settings          json.RawMessage     `json:"settings"`
	EffectiveSettings *reconcile.Settings `json:"effective_settings"`
	SettingsError     string              `json:"settings_error,omitempty"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
}

func newLinkJSON(l store.LinkRow) linkJSON {
	j := linkJSON{ID: l.ID, MasterID: l.MasterID, FollowerID: l.FollowerID, MasterLogin: l.MasterLogin, FollowerLogin: l.FollowerLogin,
		Enabled: l.Enabled, Magic: l.Magic, Version: l.Version, Settings: json.RawMessage(l.Settings), CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
	if len(j.Settings) == 0 {
		j.Settings = json.RawMessage("{}")
	}
	if s, err := reconcile.ParseSettings(l.Settings); err == nil {
		j.EffectiveSettings = &s
	} else {
		j.SettingsError = err.Error()
	}
	return j
}

// accountRowView is one row of the accounts table (and the account page's summary).
type accountRowView struct {
	store.AccountRow
	Live *actors.AccountStatus
	// Here: this process's node runs the account.
	Here bool
}

// Status is what the table shows: the live phase when this node runs the account.
func (v accountRowView) Status() string {
	if v.Live != nil {
		return v.Live.Phase.String()
	}
	return v.AccountRow.Status
}

// LastError prefers the live error.
func (v accountRowView) LastError() string {
	if v.Live != nil && v.Live.LastError != "" {
		return v.Live.LastError
	}
	return v.AccountRow.LastError
}

// LastCopy is the latest copy known.
func (v accountRowView) LastCopy() time.Time {
	if v.Live != nil && v.Live.LastCopy.After(v.LastCopyAt) {
		return v.Live.LastCopy
	}
	return v.LastCopyAt
}

// Lag is the last copy's latency when this node runs the account.
func (v accountRowView) Lag() string {
	if v.Live == nil || v.Live.LastCopy.IsZero() {
		return "—"
	}
	return fmtDur(v.Live.LastLag)
}

// BalanceText is "balance / equity", preferring the live values.
func (v accountRowView) BalanceText() string {
	if v.Live != nil && v.Live.EquityUnknown {
		return "unknown" // the trade server does not say them: never shown as 0
	}
	if v.Live != nil && v.Live.Phase != actors.PhaseStarting && (v.Live.Balance != 0 || v.Live.Equity != 0) {
		b, e := v.Live.Balance, v.Live.Equity
		return fmtMoney(&b) + " / " + fmtMoney(&e)
	}
	if v.Balance == nil && v.Equity == nil {
		return "—"
	}
	return fmtMoney(v.Balance) + " / " + fmtMoney(v.Equity)
}

// StatusClass is a CSS class for the status. A free account's status is what its last
// owner reported, so it is shown muted.
func (v accountRowView) StatusClass() string {
	if v.NodeID == "" {
		return "muted"
	}
	switch v.Status() {
	case "copying":
		return "ok"
	case "failed":
		return "bad"
	case "dirty", "reconciling", "starting":
		return "warn"
	}
	return "muted"
}

// FIXParts lists the account's FIX session settings that are set, each as "name value",
// for the account page; none when it has no settings.
func (v accountRowView) FIXParts() []string {
	f := v.FIX
	var out []string
	for _, p := range [...]struct{ name, value string }{{"SenderCompID", f.SenderCompID}, {"SenderSubID", f.SenderSubID},
		{"TargetCompID", f.TargetCompID}, {"TargetSubID", f.TargetSubID}, {"user", f.Username}, {"dialect", f.Dialect}, {"position mode", f.PositionMode}} {
		if p.value != "" {
			out = append(out, p.name+" "+p.value)
		}
	}
	return out
}

// LeaseLeftSecs is the lease countdown in seconds (for the page script).
func (v accountRowView) LeaseLeftSecs() string { return secsText(v.LeaseLeft) }

package bridge

import (
	"context"

	"github.com/snapcopier/copier/broker"
)

// orderLogPage is how many order log entries the client asks for per request, so that
// a long log never exceeds MaxFrameSize.
const orderLogPage = 5000

// Provision implements broker.Controller.
func (c *Client) Provision(ctx context.Context, spec broker.AccountSpec) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.call(ctx, methodProvision, toWireAccountSpec(spec), nil)
}

// MasterOpen implements broker.Controller.
func (c *Client) MasterOpen(ctx context.Context, login string, req broker.MasterOpenRequest) (broker.Position, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var w wirePosition
	if err := c.call(ctx, methodMasterOpen, toWireMasterOpen(login, req), &w); err != nil {
		return broker.Position{}, err
	}
	return w.toBroker(), nil
}

// MasterModify implements broker.Controller.
func (c *Client) MasterModify(ctx context.Context, login string, ticket int64, sl, tp float64) (broker.Position, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var w wirePosition
	if err := c.call(ctx, methodMasterModify, wireMasterModify{Login: login, Ticket: ticket, SL: sl, TP: tp}, &w); err != nil {
		return broker.Position{}, err
	}
	return w.toBroker(), nil
}

// MasterClose implements broker.Controller.
func (c *Client) MasterClose(ctx context.Context, login string, ticket int64, volume float64) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.call(ctx, methodMasterClose, wireMasterClose{Login: login, Ticket: ticket, Volume: volume}, nil)
}

// AccountPositions implements broker.Controller.
func (c *Client) AccountPositions(ctx context.Context, login string) ([]broker.Position, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var w []wirePosition
	if err := c.call(ctx, methodAccountPositions, wireLogin{Login: login}, &w); err != nil {
		return nil, err
	}
	return fromWirePositions(w), nil
}

// OrderLog implements broker.Controller. It fetches the log in pages of orderLogPage
// entries, all within ctx's deadline (or one RequestTimeout).
func (c *Client) OrderLog(ctx context.Context, afterSeq int64, limit int) ([]broker.OrderLogEntry, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var out []broker.OrderLogEntry
	for {
		n := orderLogPage
		if limit > 0 {
			n = min(n, limit-len(out))
		}
		var page []wireOrderLogEntry
		if err := c.call(ctx, methodOrderLog, wireOrderLogQuery{AfterSeq: afterSeq, Limit: n}, &page); err != nil {
			return nil, err
		}
		out = append(out, fromWireOrderLog(page)...)
		if len(page) < n || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		afterSeq = page[len(page)-1].Seq
	}
}

// SetFaults implements broker.Controller.
func (c *Client) SetFaults(ctx context.Context, login string, f broker.Faults) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.call(ctx, methodSetFaults, toWireFaults(login, f), nil)
}

// SetOptions implements broker.Controller.
func (c *Client) SetOptions(ctx context.Context, o broker.ServerOptions) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.call(ctx, methodSetOptions, wireServerOptions{EnforceTokens: o.EnforceTokens, DedupRequests: o.DedupRequests}, nil)
}

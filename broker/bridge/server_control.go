package bridge

import (
	"context"

	"github.com/snapcopier/copier/broker"
)

// control executes a control.* request against the server's Controller.
func (c *serverConn) control(ctx context.Context, f *inFrame) (any, error) {
	ctl := c.srv.ctl
	if ctl == nil {
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest,
			"bridge: %s: this server exposes no controller", f.Method)
	}
	switch f.Method {
	case methodProvision:
		var p wireAccountSpec
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		return nil, ctl.Provision(ctx, p.toBroker())
	case methodMasterOpen:
		var p wireMasterOpen
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		pos, err := ctl.MasterOpen(ctx, p.Login, p.toBroker())
		return toWirePosition(pos), err
	case methodMasterModify:
		var p wireMasterModify
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		pos, err := ctl.MasterModify(ctx, p.Login, p.Ticket, p.SL, p.TP)
		return toWirePosition(pos), err
	case methodMasterClose:
		var p wireMasterClose
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		return nil, ctl.MasterClose(ctx, p.Login, p.Ticket, p.Volume)
	case methodAccountPositions:
		var p wireLogin
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		ps, err := ctl.AccountPositions(ctx, p.Login)
		return toWirePositions(ps), err
	case methodOrderLog:
		var p wireOrderLogQuery
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		es, err := ctl.OrderLog(ctx, p.AfterSeq, p.Limit)
		return toWireOrderLog(es), err
	case methodSetFaults:
		var p wireFaults
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		return nil, ctl.SetFaults(ctx, p.Login, p.toBroker())
	case methodSetOptions:
		var p wireServerOptions
		if err := decodeParams(f, &p); err != nil {
			return nil, err
		}
		return nil, ctl.SetOptions(ctx, broker.ServerOptions{EnforceTokens: p.EnforceTokens, DedupRequests: p.DedupRequests})
	}
	return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "bridge: unknown method %q", f.Method)
}

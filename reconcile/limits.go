package reconcile

// Limits cap the copies of one link on its follower. Zero means no limit.
type Limits struct {
	// MaxOpenCopies is the most copies of this link open on the follower at once (on a
	// netting follower: the most master positions the link's net positions carry). Further
	// master positions are skipped until copies close.
	MaxOpenCopies int `json:"max_open_copies,omitempty"`
	// MaxLotsPerSymbol caps the follower lots of this link's copies on one follower symbol.
	// On a hedging follower a new copy that would exceed it is reduced to the room left
	// (skipped when that is below the minimum volume); on a netting follower it caps the
	// net position. Below the minimum (in whole lot steps) no copy fits: new master
	// positions on the symbol are skipped, with or without force_min.
	MaxLotsPerSymbol float64 `json:"max_lots_per_symbol,omitempty"`
}

func (l Limits) validate(fe *fieldErrors) {
	if l.MaxOpenCopies < 0 {
		fe.add("limits.max_open_copies", "must be ≥ 0 (got %d; 0 = no limit)", l.MaxOpenCopies)
	}
	if !nonNegative(l.MaxLotsPerSymbol) {
		fe.add("limits.max_lots_per_symbol", "must be ≥ 0 (got %v; 0 = no limit)", l.MaxLotsPerSymbol)
	}
}

// Window bounds late copies: copies the planner opens after the master's open, because an
// event was missed, the follower was taken over or the engine was down.
type Window struct {
	// MaxAgeSeconds: a master position older than this (Input.Now − its OpenTime, with
	// the master server's clock offset allowed for: Input.MasterClock) is not copied any
	// more. 0 copies positions of any age (for instance to take over the master's open
	// positions when a link is created). Default 60.
	MaxAgeSeconds int `json:"max_age_seconds"`
	// MaxDeviationPoints: a copy is not opened when the follower's current price (Ask for a
	// buy copy, Bid for a sell copy) is further than this many follower points from the
	// master's open price. 0 = no check; no check either when the follower's quote is
	// unknown.
	MaxDeviationPoints float64 `json:"max_deviation_points,omitempty"`
}

func (w Window) validate(fe *fieldErrors) {
	if w.MaxAgeSeconds < 0 {
		fe.add("window.max_age_seconds", "must be ≥ 0 (got %d; 0 = no age limit)", w.MaxAgeSeconds)
	}
	if !nonNegative(w.MaxDeviationPoints) {
		fe.add("window.max_deviation_points", "must be ≥ 0 (got %v; 0 = no check)", w.MaxDeviationPoints)
	}
}

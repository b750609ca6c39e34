// Package connauth lets the HTTP handler that authenticated a request mark the connection
// the request came on, so the server can hold anonymous connections to shorter limits than
// an operator's (cmd/copierd: a short header timeout for connections that never
// authenticated, so slow-header clients cannot hold the port for long).
//
// The server puts a Mark in each connection's context (http.Server.ConnContext); the
// handler calls Authenticated with the request's context once its credentials are checked.
package connauth

import (
	"context"
	"sync/atomic"
)

// Mark is one connection's authentication state. The zero value is unauthenticated.
type Mark struct{ ok atomic.Bool }

// Authenticated reports whether a request on the connection was authenticated.
func (m *Mark) Authenticated() bool { return m != nil && m.ok.Load() }

type key struct{}

// With returns ctx carrying m, the mark of the connection ctx belongs to.
func With(ctx context.Context, m *Mark) context.Context { return context.WithValue(ctx, key{}, m) }

// Authenticated marks the connection of ctx (a request's context) as authenticated; it
// does nothing where the server keeps no mark.
func Authenticated(ctx context.Context) {
	if m := Of(ctx); m != nil {
		m.ok.Store(true)
	}
}

// Of returns the mark of the connection of ctx, nil where the server keeps none.
func Of(ctx context.Context) *Mark {
	m, _ := ctx.Value(key{}).(*Mark)
	return m
}

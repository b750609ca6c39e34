package connauth

import (
	"context"
	"testing"
)

func TestAuthenticatedMarksTheConnection(t *testing.T) {
	var m Mark
	ctx := With(context.Background(), &m)
	if m.Authenticated() {
		t.Fatal("a new mark is authenticated")
	}
	Authenticated(context.WithValue(ctx, struct{}{}, 1)) // a request's context derives from the connection's
	if !m.Authenticated() || !Of(ctx).Authenticated() {
		t.Fatal("not marked")
	}
	Authenticated(context.Background()) // no mark: nothing happens
	if Of(context.Background()).Authenticated() {
		t.Fatal("a nil mark is authenticated")
	}
}

package console

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestRefusalStatus: the one mapping of a refusal to an HTTP status.
func TestRefusalStatus(t *testing.T) {
	for k, want := range map[refusal]int{
		refusedInvalid:     http.StatusUnprocessableEntity,
		refusedConflict:    http.StatusConflict,
		refusedNotFound:    http.StatusNotFound,
		refusedUnavailable: http.StatusServiceUnavailable,
		refusedInternal:    http.StatusInternalServerError,
	} {
		if got := k.status(); got != want {
			t.Errorf("refusal %d: status %d, want %d", k, got, want)
		}
	}
}

// TestOperationsReturnTypedRefusals drives the create and update operations without HTTP
// on a real database: each refusal comes back as an *opError of its kind with the field
// to blame, and a timed-out database is "unavailable", not an internal error.
func TestOperationsReturnTypedRefusals(t *testing.T) {
	db := storetest.NewDB(t)
	s, err := New(Options{Pool: db.Pool, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	str := func(v string) *string { return &v }
	i64 := func(v int64) *int64 { return &v }
	account := func(id int64, role string) *accountInput {
		return &accountInput{ID: i64(id), Role: str(role), Platform: str("sim"), Login: str("l" + role)}
	}
	refusedAs := func(what string, err error, kind refusal, field string) {
		t.Helper()
		var oe *opError
		if !errors.As(err, &oe) {
			t.Fatalf("%s: error %v, want an *opError", what, err)
		}
		if oe.kind != kind || oe.fields.m[field] == "" {
			t.Fatalf("%s: refusal %d with fields %v, want kind %d on %q", what, oe.kind, oe.fields.m, kind, field)
		}
	}

	if id, err := s.createAccount(ctx, "tester", account(1, "master")); err != nil || id != 1 {
		t.Fatalf("create master: %d, %v", id, err)
	}
	if _, err := s.createAccount(ctx, "tester", account(2, "follower")); err != nil {
		t.Fatalf("create follower: %v", err)
	}
	_, err = s.createAccount(ctx, "tester", account(1, "master"))
	refusedAs("duplicate id", err, refusedConflict, "id")
	_, err = s.createAccount(ctx, "tester", &accountInput{ID: i64(3), Role: str("boss"), Platform: str("sim"), Login: str("x")})
	refusedAs("bad role", err, refusedInvalid, "role")
	refusedAs("missing account", s.updateAccount(ctx, "tester", 99, &accountInput{Login: str("y")}), refusedNotFound, "id")
	refusedAs("close-only on a master", s.updateAccount(ctx, "tester", 1, &accountInput{CloseOnly: str("let_close")}), refusedInvalid, "close_only")

	link := &linkInput{MasterID: i64(1), FollowerID: i64(2), Magic: i64(7)}
	lid, err := s.createLink(ctx, "tester", link)
	if err != nil {
		t.Fatalf("create link: %v", err)
	}
	_, err = s.createLink(ctx, "tester", &linkInput{MasterID: i64(2), FollowerID: i64(1), Magic: i64(8)})
	refusedAs("roles swapped", err, refusedInvalid, "master_id")
	_, err = s.createLink(ctx, "tester", link)
	refusedAs("same magic", err, refusedConflict, "magic")
	cur, err := store.GetLinkRow(ctx, db.Pool, lid)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.updateLink(ctx, "tester", cur, &linkInput{Magic: i64(9)}); err != nil {
		t.Fatalf("update link: %v", err)
	}

	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.createAccount(gone, "tester", account(4, "follower"))
	refusedAs("database gone", err, refusedUnavailable, "id")
}

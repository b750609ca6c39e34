package secrets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/snapcopier/copier/store/secrets"
)

func newSealer(t *testing.T) (*secrets.Sealer, []byte) {
	t.Helper()
	key, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, key
}

func TestSealOpenRoundTrip(t *testing.T) {
	s, _ := newSealer(t)
	for _, plain := range []string{"", "p", "hunter2", strings.Repeat("ü", 500), "with\x00nul"} {
		sealed, err := s.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(sealed) != len(plain)+secrets.Overhead {
			t.Fatalf("sealed length %d, want %d", len(sealed), len(plain)+secrets.Overhead)
		}
		if sealed[0] != secrets.Version1 {
			t.Fatalf("version byte %d", sealed[0])
		}
		if len(plain) > 3 && bytes.Contains(sealed, []byte(plain)) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := s.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		if got != plain {
			t.Fatalf("Open = %q, want %q", got, plain)
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	s, _ := newSealer(t)
	a, _ := s.Seal("same")
	b, _ := s.Seal("same")
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one plaintext are identical")
	}
}

func TestOpenRejectsTamperingAndOtherKeys(t *testing.T) {
	s, _ := newSealer(t)
	other, _ := newSealer(t)
	sealed, err := s.Seal("top secret password")
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, secrets.ErrMalformed},
		{"short", sealed[:10], secrets.ErrMalformed},
		{"version", flip(0), secrets.ErrUnsupportedVersion},
		{"key id", flip(2), secrets.ErrWrongKey},
		{"nonce", flip(6), secrets.ErrDecrypt},
		{"ciphertext", flip(len(sealed) - 20), secrets.ErrDecrypt},
		{"tag", flip(len(sealed) - 1), secrets.ErrDecrypt},
		{"truncated tag", sealed[:len(sealed)-1], secrets.ErrDecrypt},
	}
	for _, c := range cases {
		_, err := s.Open(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "top secret") {
			t.Errorf("%s: error leaks the plaintext: %v", c.name, err)
		}
	}
	if _, err := other.Open(sealed); !errors.Is(err, secrets.ErrWrongKey) {
		t.Fatalf("other key: %v, want ErrWrongKey", err)
	}
}

func TestNewSealerRejectsBadKeys(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := secrets.NewSealer(make([]byte, n)); !errors.Is(err, secrets.ErrBadKey) {
			t.Errorf("key of %d bytes: %v, want ErrBadKey", n, err)
		}
	}
}

func TestParseKeyFormats(t *testing.T) {
	key, _ := secrets.GenerateKey()
	for name, s := range map[string]string{
		"hex":         hex.EncodeToString(key),
		"HEX":         strings.ToUpper(hex.EncodeToString(key)),
		"base64":      base64.StdEncoding.EncodeToString(key),
		"raw base64":  base64.RawStdEncoding.EncodeToString(key),
		"url base64":  base64.URLEncoding.EncodeToString(key),
		"encode key":  secrets.EncodeKey(key),
		"white space": "  " + secrets.EncodeKey(key) + "\n",
	} {
		got, err := secrets.ParseKey(s)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, key) {
			t.Errorf("%s: wrong key", name)
		}
	}
	for _, bad := range []string{"", "   ", "zz", base64.StdEncoding.EncodeToString(key[:16]), strings.Repeat("g", 64), "not base64 !!"} {
		_, err := secrets.ParseKey(bad)
		if !errors.Is(err, secrets.ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey", bad, err)
		}
		if len(bad) > 4 && err != nil && strings.Contains(err.Error(), strings.TrimSpace(bad)) {
			t.Errorf("error echoes the key: %v", err)
		}
	}
}

func TestKeyFromEnv(t *testing.T) {
	key, _ := secrets.GenerateKey()
	const name = "COPIER_TEST_SECRET_KEY"
	t.Setenv(name, hex.EncodeToString(key))
	got, err := secrets.KeyFromEnv(name)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("KeyFromEnv: %v", err)
	}
	t.Setenv(name, "")
	if _, err := secrets.KeyFromEnv(name); !errors.Is(err, secrets.ErrNoKey) || !strings.Contains(err.Error(), name) {
		t.Fatalf("empty: %v", err)
	}
	t.Setenv(name, "c2VjcmV0LXRoYXQtaXMtdG9vLXNob3J0")
	_, err = secrets.KeyFromEnv(name)
	if !errors.Is(err, secrets.ErrBadKey) || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("bad: %v", err)
	}
}

func TestSealerNeverPrintsItsKey(t *testing.T) {
	s, key := newSealer(t)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s)} {
		if strings.Contains(out, hex.EncodeToString(key)) || strings.Contains(out, fmt.Sprint(key)) {
			t.Fatalf("printing the sealer shows the key: %s", out)
		}
		if !strings.Contains(out, s.KeyID()) {
			t.Fatalf("printing the sealer does not show its key id: %s", out)
		}
	}
}

// TestParseKeyMessages: a hex key of the wrong length is described in hex digits and
// bytes (not as whatever base64 makes of it), and an all-zero key is refused.
func TestParseKeyMessages(t *testing.T) {
	key, _ := secrets.GenerateKey()
	_, err := secrets.ParseKey(hex.EncodeToString(key)[:62])
	if !errors.Is(err, secrets.ErrBadKey) || !strings.Contains(err.Error(), "62 hex digits (31 bytes)") {
		t.Errorf("62 hex digits: %v", err)
	}
	_, err = secrets.ParseKey(hex.EncodeToString(key)[:63])
	if !errors.Is(err, secrets.ErrBadKey) || !strings.Contains(err.Error(), "63 hex digits") {
		t.Errorf("63 hex digits: %v", err)
	}
	for _, zero := range []string{strings.Repeat("0", 64), base64.StdEncoding.EncodeToString(make([]byte, 32))} {
		if _, err := secrets.ParseKey(zero); !errors.Is(err, secrets.ErrBadKey) || !strings.Contains(err.Error(), "zero") {
			t.Errorf("all-zero key %q: %v", zero, err)
		}
	}
}

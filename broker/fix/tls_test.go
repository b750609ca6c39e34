package fix_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// selfSigned returns a TLS configuration with a fresh certificate for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fixfront"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// FIX over TLS: the front accepts TLS only; a TLS client logs on and trades, a plain one
// does not get in.
func TestTLS(t *testing.T) {
	e := newEnv(t, envOptions{front: fixfront.Options{TLS: selfSigned(t)}, client: fix.Config{TLS: true, TLSInsecureSkipVerify: true}})
	s := connect(t, e, "tls")
	sym := firstSymbol(t, s)
	if _, err := s.Open(t.Context(), broker.OpenRequest{Order: order(), Symbol: sym.Name, Side: broker.Buy, Volume: sym.MinLot}); err != nil {
		t.Fatalf("open over TLS: %v", err)
	}
	plain, err := fix.New(fix.Config{Addr: e.front.Addr(), LogonTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = plain.Connect(t.Context(), broker.Credentials{Login: "tls", Password: "pw"})
	wantClass(t, err, broker.ErrDisconnected)
}

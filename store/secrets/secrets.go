// Package secrets seals broker credentials before they are written to
// trading_accounts.credentials, and opens them again only when a node connects.
//
// Sealing is AES-256-GCM with a random 96-bit nonce per message and a 32-byte key that the
// operator supplies (COPIER_SECRET_KEY, base64 or hex; GenerateKey makes one). The sealed
// form is versioned so the scheme can change without ambiguity:
//
//	version 1:  0x01 | key id (4 bytes) | nonce (12 bytes) | ciphertext | GCM tag (16 bytes)
//
// The key id is the first four bytes of a SHA-256 of the key under a fixed label; it lets
// Open say "sealed with another key" instead of a bare authentication failure, and reveals
// nothing useful about the key. The version byte and key id are authenticated as
// additional data, so neither can be altered without Open failing.
//
// No error, String or GoString of this package ever contains a plaintext or a key.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the length of a sealing key: 32 bytes (AES-256).
const KeySize = 32

// Version1 is the first byte of a version-1 sealed value.
const Version1 byte = 1

const (
	keyIDSize  = 4
	nonceSize  = 12
	headerSize = 1 + keyIDSize
	// Overhead is how many bytes a version-1 sealed value adds to its plaintext.
	Overhead = headerSize + nonceSize + 16
)

// Errors returned by this package. They never carry secret material.
var (
	// ErrNoKey reports that the key variable is not set.
	ErrNoKey = errors.New("secrets: no key")
	// ErrBadKey reports a key of the wrong length or encoding.
	ErrBadKey = errors.New("secrets: invalid key")
	// ErrMalformed reports a sealed value that is too short or otherwise not a sealed value.
	ErrMalformed = errors.New("secrets: malformed sealed value")
	// ErrUnsupportedVersion reports a sealed value of a format this build does not know.
	ErrUnsupportedVersion = errors.New("secrets: unsupported sealed value version")
	// ErrWrongKey reports a value sealed with a different key.
	ErrWrongKey = errors.New("secrets: sealed with a different key")
	// ErrDecrypt reports a value that does not authenticate: corrupted or tampered with.
	ErrDecrypt = errors.New("secrets: sealed value does not authenticate (corrupted or tampered with)")
)

// Sealer seals and opens secrets with one key. It is safe for concurrent use.
type Sealer struct {
	aead  cipher.AEAD
	keyID [keyIDSize]byte
}

// NewSealer returns a Sealer for a 32-byte key. The key is copied into the cipher state;
// the caller may wipe its slice afterwards.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w: want %d bytes, got %d", ErrBadKey, KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	s := &Sealer{aead: aead}
	s.keyID = keyID(key)
	return s, nil
}

// keyID derives the public key identifier stored in every sealed value.
func keyID(key []byte) [keyIDSize]byte {
	h := sha256.New()
	h.Write([]byte("copier/secrets key id v1\x00"))
	h.Write(key)
	var id [keyIDSize]byte
	copy(id[:], h.Sum(nil))
	return id
}

// KeyID returns the key's public identifier in hex, for logs and diagnostics.
func (s *Sealer) KeyID() string { return hex.EncodeToString(s.keyID[:]) }

// String describes the sealer by its key id only.
func (s *Sealer) String() string { return "secrets.Sealer(key " + s.KeyID() + ")" }

// GoString describes the sealer by its key id only (never the key).
func (s *Sealer) GoString() string { return s.String() }

// Seal encrypts plaintext into a version-1 sealed value with a fresh random nonce.
func (s *Sealer) Seal(plaintext string) ([]byte, error) {
	out := make([]byte, headerSize+nonceSize, headerSize+nonceSize+len(plaintext)+s.aead.Overhead())
	out[0] = Version1
	copy(out[1:headerSize], s.keyID[:])
	nonce := out[headerSize : headerSize+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secrets: random nonce: %w", err)
	}
	return s.aead.Seal(out, nonce, []byte(plaintext), out[:headerSize]), nil
}

// Open decrypts a sealed value. It fails with ErrMalformed, ErrUnsupportedVersion,
// ErrWrongKey or ErrDecrypt; the error never includes the value or the plaintext.
func (s *Sealer) Open(sealed []byte) (string, error) {
	if len(sealed) == 0 {
		return "", fmt.Errorf("%w: empty", ErrMalformed)
	}
	if sealed[0] != Version1 {
		return "", fmt.Errorf("%w: version %d", ErrUnsupportedVersion, sealed[0])
	}
	if len(sealed) < headerSize+nonceSize+s.aead.Overhead() {
		return "", fmt.Errorf("%w: %d bytes is too short", ErrMalformed, len(sealed))
	}
	if !bytes.Equal(sealed[1:headerSize], s.keyID[:]) {
		return "", fmt.Errorf("%w (value key id %s, this key %s)", ErrWrongKey,
			hex.EncodeToString(sealed[1:headerSize]), s.KeyID())
	}
	nonce := sealed[headerSize : headerSize+nonceSize]
	plain, err := s.aead.Open(nil, nonce, sealed[headerSize+nonceSize:], sealed[:headerSize])
	if err != nil {
		return "", ErrDecrypt
	}
	return string(plain), nil
}

// GenerateKey returns a new random 32-byte key.
func GenerateKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secrets: generate key: %w", err)
	}
	return key, nil
}

// EncodeKey returns key in standard base64, the form KeyFromEnv and ParseKey read.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// ParseKey decodes a 32-byte key written as 64 hex digits or as base64 (standard or URL
// alphabet, padded or not). Surrounding white space is ignored. The error never repeats
// the input.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadKey)
	}
	key, err := decodeKey(s)
	if err != nil {
		return nil, err
	}
	if allZero(key) {
		return nil, fmt.Errorf("%w: all %d bytes are zero; generate a random key with: openssl rand -base64 32", ErrBadKey, KeySize)
	}
	return key, nil
}

// decodeKey decodes a key written as hex or base64. A string of hex digits only is
// judged as hex (a 62-digit key is "31 bytes as hex", not whatever base64 makes of it).
func decodeKey(s string) ([]byte, error) {
	if isHex(s) {
		if len(s) == 2*KeySize {
			return hex.DecodeString(s)
		}
		// Unpadded base64 of 32 bytes may, very rarely, be hex digits only.
		if key, err := base64.RawStdEncoding.DecodeString(s); err == nil && len(key) == KeySize {
			return key, nil
		}
		return nil, fmt.Errorf("%w: %d hex digits (%s), want %d (%d bytes)", ErrBadKey, len(s), hexBytes(len(s)), 2*KeySize, KeySize)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("%w: base64 that decodes to %d bytes, want %d", ErrBadKey, len(key), KeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("%w: want %d bytes as %d hex digits or base64 (generate one with: openssl rand -base64 32)",
		ErrBadKey, KeySize, 2*KeySize)
}

// isHex reports whether s is hex digits only.
func isHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// hexBytes describes n hex digits as bytes.
func hexBytes(n int) string {
	if n%2 != 0 {
		return fmt.Sprintf("%d.5 bytes: an odd count", n/2)
	}
	return fmt.Sprintf("%d bytes", n/2)
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// KeyFromEnv reads a key from the environment variable name (e.g. "COPIER_SECRET_KEY")
// with ParseKey. An unset or empty variable is ErrNoKey. Errors name the variable, never
// its value.
func KeyFromEnv(name string) ([]byte, error) {
	v, ok := os.LookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%w: %s is not set (generate a key with: openssl rand -base64 32)", ErrNoKey, name)
	}
	key, err := ParseKey(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return key, nil
}

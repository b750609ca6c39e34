package fixfront

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// Bounds of a Logon's credentials and of what the front remembers of logons.
const (
	maxLoginLen    = 64
	maxPasswordLen = 256
	// maxLogonRecords bounds Logons(): the most recent ones are kept (every logon was
	// kept, and 40 logons with 1 MiB names took 108 MB).
	maxLogonRecords = 1024
)

// checkCredentials refuses a user name or password a venue would not accept: empty or
// too long, not UTF-8, or with control characters (NUL included).
func checkCredentials(user, pass string) error {
	if user == "" {
		return errors.New("Username (553) is required")
	}
	if len(user) > maxLoginLen {
		return errors.New("Username (553) longer than " + strconv.Itoa(maxLoginLen) + " bytes")
	}
	if len(pass) > maxPasswordLen {
		return errors.New("Password (554) longer than " + strconv.Itoa(maxPasswordLen) + " bytes")
	}
	for _, f := range []struct{ name, v string }{{"Username (553)", user}, {"Password (554)", pass}} {
		if !utf8.ValidString(f.v) || hasControl(f.v) {
			return errors.New(f.name + " holds a control character or is not UTF-8")
		}
	}
	return nil
}

// hasControl reports whether s holds a control character.
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// checkToken refuses a Logon whose RawData (96) is not want (when want is set). The
// digests are compared, in constant time, so neither the token nor its length leaks.
func checkToken(want string, msg *quickfix.Message) error {
	if want == "" {
		return nil
	}
	if !msg.Body.Has(fixwire.TagRawData) {
		return errors.New("the server requires its token in RawData (96)")
	}
	got, _ := msg.Body.GetString(fixwire.TagRawData)
	if n, err := msg.Body.GetInt(fixwire.TagRawDataLength); err != nil || n != len(got) {
		return errors.New("RawDataLength (95) must be the length of RawData (96)")
	}
	w, g := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(w[:], g[:]) != 1 {
		return errors.New("bad token in RawData (96)")
	}
	return nil
}

// checkSum verifies a raw message's CheckSum (10): quickfixgo's acceptor does not check
// it on the Logon.
func checkSum(raw []byte) error {
	i := bytes.LastIndex(raw, []byte("\x0110="))
	if i == -1 {
		return errors.New("no CheckSum (10)")
	}
	sum := 0
	for _, c := range raw[:i+1] {
		sum += int(c)
	}
	got := bytes.TrimSuffix(raw[i+4:], []byte{1})
	if want := strconv.Itoa(sum % 256); len(got) != 3 || string(got) != "000"[:3-len(want)]+want {
		return errors.New("bad CheckSum (10)")
	}
	return nil
}

// passwords remembers, per login, a hash of the password of its first accepted logon
// and refuses any other later: the simulator's auto-provisioned accounts accept any
// password, and 200 of 200 wrong-password logons once succeeded.
type passwords struct {
	mu sync.Mutex
	by map[string][sha256.Size]byte
}

// check reports whether pass is the password remembered for login (or none is).
func (p *passwords) check(login, pass string) bool {
	h := sha256.Sum256([]byte(pass))
	p.mu.Lock()
	defer p.mu.Unlock()
	want, ok := p.by[login]
	return !ok || subtle.ConstantTimeCompare(want[:], h[:]) == 1
}

// remember keeps pass as login's password unless one is kept already.
func (p *passwords) remember(login, pass string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string][sha256.Size]byte{}
	}
	if _, ok := p.by[login]; !ok {
		p.by[login] = sha256.Sum256([]byte(pass))
	}
}

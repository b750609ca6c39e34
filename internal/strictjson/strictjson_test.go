package strictjson

import (
	"encoding/json"
	"errors"
	"testing"
)

type inner struct {
	A int `json:"a"`
}

type doc struct {
	ID   *int64            `json:"id"`
	Name string            `json:"name"`
	In   inner             `json:"in"`
	List []inner           `json:"list"`
	Map  map[string]inner  `json:"map"`
	Raw  json.RawMessage   `json:"raw"`
	Any  map[string]string `json:"any"`
	embed
}

type embed struct {
	E bool `json:"e"`
}

func TestDecode(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{`{"id":1,"name":"x","in":{"a":1},"list":[{"a":2}],"map":{"K":{"a":3}},"raw":{"Whatever":1},"e":true}`, nil},
		{` {} `, nil},
		{`{"ID":1}`, ErrUnknownField},
		{`{"in":{"A":1}}`, ErrUnknownField},
		{`{"list":[{"a":1},{"A":1}]}`, ErrUnknownField},
		{`{"map":{"k":{"A":1}}}`, ErrUnknownField},
		{`{"E":true}`, ErrUnknownField},
		{`{"id":1,"id":2}`, ErrDuplicateField},
		{`{} xxx`, ErrTrailingData},
		{`{}}`, ErrTrailingData},
		{`{} {}`, ErrTrailingData},
		{"{\"name\":\"\xff\"}", ErrInvalidUTF8},
		{``, ErrEmpty},
		{`  `, ErrEmpty},
		{`null`, ErrNotObject},
		{`[]`, ErrNotObject},
		{`"x"`, ErrNotObject},
	}
	for _, c := range cases {
		var d doc
		err := Decode([]byte(c.in), &d)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Decode(%q) = %v, want %v", c.in, err, c.want)
		}
	}
}

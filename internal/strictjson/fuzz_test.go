package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode: whatever Decode accepts, encoding/json accepts too and reads the same value;
// Decode never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":1,"name":"x","in":{"a":1},"list":[{"a":2}],"map":{"k":{"a":3}},"raw":{"X":1},"e":true}`,
		`{"ID":1}`, `{"id":1,"id":2}`, `{} x`, `{"map":{"k":{"A":1}}}`, `{"raw":[1,{"a":"\u0000"}]}`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict doc
		if err := Decode(data, &strict); err != nil {
			return
		}
		var loose doc
		if err := json.Unmarshal(data, &loose); err != nil {
			t.Fatalf("strict accepted what encoding/json refuses: %v", err)
		}
		if !reflect.DeepEqual(strict, loose) {
			t.Fatalf("strict and encoding/json read different values:\n%+v\n%+v", strict, loose)
		}
	})
}

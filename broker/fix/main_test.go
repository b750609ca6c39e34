package fix_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/snapcopier/copier/internal/fixleaks"
)

// quickfixgo v0.9.7 leaves a few goroutines of a stopped session blocked for good
// (internal/fixleaks); those are ignored, nothing else is.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, fixleaks.Ignore()...)
}

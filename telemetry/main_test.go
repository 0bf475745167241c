package telemetry

import (
	"testing"

	"github.com/toolstream/toolstream/internal/leak"
)

// The tests on the OpenTelemetry SDK are in telemetry/oteltests/telemetry (a
// module of its own, so that the library does not require the SDK).
func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

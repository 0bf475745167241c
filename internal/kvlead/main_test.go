package kvlead_test

import (
	"testing"

	"github.com/toolstream/toolstream/internal/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

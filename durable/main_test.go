package durable_test

import (
	"testing"

	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

func TestMain(m *testing.M) {
	natstest.ServeIfChild() // TestLeaderKilledMidRun's servers
	leak.VerifyTestMain(m)
}

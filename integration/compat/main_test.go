package compat

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/natstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

package snapshot_test

import (
	"os"
	"testing"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// TestMain removes the PostgreSQL template volumes this package's engine
// tests made (testenv.WithoutNewTemplates): the engine ends as it began.
func TestMain(m *testing.M) {
	os.Exit(testenv.WithoutNewTemplates(m.Run))
}

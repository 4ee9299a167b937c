package rollbackflow_test

import (
	"testing"

	"github.com/ripcord/ripcord/internal/testbin"
)

// TestMain removes the ripcord binary the CLI tests built (testbin.Ripcord).
func TestMain(m *testing.M) { testbin.Main(m) }

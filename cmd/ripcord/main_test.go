package main

import (
	"testing"

	"github.com/ripcord/ripcord/internal/testbin"
)

// TestMain removes the ripcord binary the tests built (testbin.Ripcord).
func TestMain(m *testing.M) { testbin.Main(m) }

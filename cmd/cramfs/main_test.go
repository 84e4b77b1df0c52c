package main

import (
	"os"
	"testing"
)

// TestMain removes the binary buildCramfs built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

package main

import (
	"io"
	"strings"
	"testing"
)

func TestFlagsHTTP(t *testing.T) {
	for _, bad := range []string{"8081", "phone", "127.0.0.1:"} {
		if _, err := parseFlags([]string{"--http", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "--http") {
			t.Errorf("--http %q: %v, want an error naming the flag", bad, err)
		}
	}
	if c, err := parseFlags([]string{"--http", "127.0.0.1:0"}, io.Discard); err != nil || c.http != "127.0.0.1:0" {
		t.Errorf("--http 127.0.0.1:0: %v", err)
	}
}

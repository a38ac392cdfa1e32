package core

import (
	"context"
	"net/http"
	"os"
	gosync "sync"
	"time"
)

var mu gosync.Mutex

// Step breaks every rule once.
func Step(ctx context.Context) {
	go func() { _ = os.Getenv("HOME") }()
	_ = http.MethodGet
	_ = time.Now()
}

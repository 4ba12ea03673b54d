package cuzk

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookHandler runs onHandle for each record (and panics in Enabled while panicky is set).
type hookHandler struct {
	panicky  *atomic.Bool
	onHandle func()
}

func (h hookHandler) Enabled(context.Context, slog.Level) bool {
	if h.panicky != nil && h.panicky.Load() {
		panic("Enabled panics")
	}
	return true
}
func (h hookHandler) Handle(context.Context, slog.Record) error {
	if h.onHandle != nil {
		h.onHandle()
	}
	return nil
}
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h hookHandler) WithGroup(string) slog.Handler      { return h }

func unsetRustLog(t *testing.T) {
	if v, ok := os.LookupEnv("RUST_LOG"); ok {
		os.Unsetenv("RUST_LOG")
		t.Cleanup(func() { os.Setenv("RUST_LOG", v) })
	}
}

// A handler whose Enabled panics loses its records; the panic is reported and the host lives.
func TestAPanicInAHandlersEnabledIsRecovered(t *testing.T) {
	unsetRustLog(t)
	panicky := &atomic.Bool{}
	if err := SetLogger(slog.New(hookHandler{panicky: panicky})); err != nil {
		t.Fatal(err)
	}
	panicky.Store(true) // after SetLogger, which asks Enabled for the level to pass on
	before := panicCount.Load()
	restart(t, Config{ParamsDir: paramsDir()}) // logs the engine's start line
	if err := SetLogger(nil); err != nil {     // delivers what was logged before it
		t.Fatal(err)
	}
	if panicCount.Load() == before {
		t.Fatal("no panic reported: the handler's Enabled was never called")
	}
}

// A handler that calls SetLogger while another goroutine is inside SetLogger (waiting for that
// handler's call to return) does not deadlock; the handler's logger, the later call, is the one
// left in place.
func TestSetLoggerFromAHandlerWhileAnotherSetLoggerRuns(t *testing.T) {
	unsetRustLog(t)
	inHandler := make(chan struct{})
	fromHandler := slog.New(hookHandler{})
	var once sync.Once
	var handlerErr atomic.Value
	first := slog.New(hookHandler{onHandle: func() {
		once.Do(func() {
			close(inHandler)
			// Wait until the other goroutine holds SetLogger's lock.
			deadline := time.Now().Add(20 * time.Second)
			for logMu.TryLock() {
				logMu.Unlock()
				if time.Now().After(deadline) {
					handlerErr.Store("the other SetLogger never started")
					return
				}
				runtime.Gosched()
			}
			if err := SetLogger(fromHandler); err != nil {
				handlerErr.Store(err.Error())
			}
		})
	}})
	if err := SetLogger(first); err != nil {
		t.Fatal(err)
	}
	restart(t, Config{ParamsDir: paramsDir()}) // logs the engine's start line
	select {
	case <-inHandler:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler never received a record")
	}
	done := make(chan error, 1)
	go func() { done <- SetLogger(slog.New(hookHandler{})) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("DEADLOCK: SetLogger did not return within 60 s while a handler called SetLogger")
	}
	if e := handlerErr.Load(); e != nil {
		t.Fatalf("handler: %v", e)
	}
	if got := logger.Load(); got != fromHandler {
		t.Errorf("logger in place: %p, want the handler's %p", got, fromHandler)
	}
	if err := SetLogger(nil); err != nil {
		t.Fatal(err)
	}
}

// SetLogger with a handler whose Enabled panics is refused with INVALID_ARGUMENT, and nothing
// stays held. The hazard: the panic leaves logMu held, and every later SetLogger waits for ever.
func TestSetLoggerWhoseEnabledPanicsHoldsNothing(t *testing.T) {
	panicky := &atomic.Bool{}
	panicky.Store(true)
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("SetLogger panicked: %v", p)
			}
		}()
		err = SetLogger(slog.New(hookHandler{panicky: panicky}))
	}()
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Errorf("SetLogger with a panicking Enabled: %v, want INVALID_ARGUMENT", err)
	}
	done := make(chan error, 1)
	go func() { done <- SetLogger(nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SetLogger(nil) afterwards: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SetLogger(nil) still waiting after 30 s: a lock was left held")
	}
}

package cuzk

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
)

// LevelTrace is the slog level of the library's TRACE records (below slog.LevelDebug).
const LevelTrace = slog.LevelDebug - 4

// logger is the logger in place, the one the library's records go to (nil: stderr).
var logger atomic.Pointer[slog.Logger]

// logMu orders SetLogger calls. A handler never waits for it: see pending.
var logMu sync.Mutex

// pending holds the logger that a handler asked for while another SetLogger held logMu; that
// holder (or the next to take logMu) puts it in place before letting logMu go.
var pending atomic.Pointer[pendingLogger]

type pendingLogger struct{ l *slog.Logger }

// SetLogger sends the library's log records (cuzk's and those of the proving code inside
// it) to l instead of stderr; nil goes back to stderr. Each record arrives as one slog
// record with the library's level (TRACE as [LevelTrace]), its time, its message and a
// "target" attribute (the Rust module, e.g. "cuzk::engine"). RUST_LOG filters them as it
// always did; where it is not set, the most verbose level l is enabled for (down to
// TRACE) is what the library passes on. Records reach l from one library thread, in order,
// never from the goroutine or worker that logged; l may call into cuzk. When SetLogger returns,
// the records logged before it have gone to the old logger (the library waits up to five
// seconds for them) and the old one is not called again. ErrUnsupported where the process
// already had a Rust logger of its own.
//
// Called from inside a handler, SetLogger never waits: where no other SetLogger is running it
// takes effect at once (the running handler call finishes); where one is, that one puts l in
// place when it is done, after its own logger, and SetLogger returns nil at once. A panic in a
// handler (Enabled or Handle) loses that record and is reported like a callback's panic.
func SetLogger(l *slog.Logger) error {
	if raw.OnLogThread() {
		if !logMu.TryLock() {
			pending.Store(&pendingLogger{l})
			// The holder may have let logMu go before it could see the request.
			if logMu.TryLock() {
				unlockLogMu()
			}
			return nil
		}
	} else {
		logMu.Lock()
	}
	// Let go whatever happens in setLogger: a later SetLogger must never wait for ever.
	defer unlockLogMu()
	return setLogger(l)
}

// unlockLogMu puts the loggers that handlers asked for in place, then lets logMu go.
func unlockLogMu() {
	for {
		for p := pending.Swap(nil); p != nil; p = pending.Swap(nil) {
			// Its caller has returned; an error leaves the logger before it in place.
			_ = setLogger(p.l)
		}
		logMu.Unlock()
		if pending.Load() == nil || !logMu.TryLock() {
			return
		}
	}
}

// setLogger does SetLogger's work; logMu is held, so raw.LogSetCallback calls never overlap.
func setLogger(l *slog.Logger) error {
	if l == nil {
		err := fromRaw(raw.LogSetCallback(nil, 0))
		logger.Store(nil)
		return err
	}
	// The most verbose library level l takes (ERROR at least). A handler whose Enabled
	// panics is refused with an error, the logger before it left in place.
	level, err := levelOf(l)
	if err != nil {
		return err
	}
	// Each logger gets a func of its own: the records logged before this call still go to the
	// old logger's func, and the library never calls that func after this returns.
	if err := raw.LogSetCallback(func(rec raw.LogRecord, target, message string) {
		handle(l, rec, target, message)
	}, level); err != nil {
		return fromRaw(err)
	}
	logger.Store(l)
	return nil
}

// levelOf is the most verbose library level l is enabled for (ERROR at least), or an
// INVALID_ARGUMENT error where its handler's Enabled panics.
func levelOf(l *slog.Logger) (level uint32, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("the logger's Enabled panicked: %v", p)}
		}
	}()
	level = 1
	for n := len(slogLevels) - 1; n > 1; n-- {
		if l.Enabled(context.Background(), slogLevels[n]) {
			return uint32(n), nil
		}
	}
	return level, nil
}

// slogLevels maps the library's levels (1 ERROR ... 5 TRACE) to slog's.
var slogLevels = [...]slog.Level{slog.LevelError, slog.LevelError, slog.LevelWarn, slog.LevelInfo,
	slog.LevelDebug, LevelTrace}

// handle passes one library record to l, on the library's log thread.
func handle(l *slog.Logger, rec raw.LogRecord, target, message string) {
	level := slog.LevelInfo
	if n := int(rec.Level); n >= 1 && n < len(slogLevels) {
		level = slogLevels[n]
	}
	defer func() {
		// A panicking handler (Enabled or Handle) loses its record; the panic never reaches the
		// library's thread.
		if p := recover(); p != nil {
			reportPanic(p)
		}
	}()
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.UnixMicro(int64(rec.UnixUs)), level, message, 0)
	r.AddAttrs(slog.String("target", target))
	_ = l.Handler().Handle(ctx, r)
}

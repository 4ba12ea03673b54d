package raw

/*
#include "cuzk.h"

// Defined in logs.c.
extern cuzk_status cuzkGoLogSet(uintptr_t key, uint32_t max_level, cuzk_error *err);
extern int cuzkGoOnLogThread(void);
*/
import "C"

import "sync"

// LogFunc receives one log record (a copy) with its target (the Rust module, such as
// "cuzk::engine") and its message. It runs on the library's one log thread, one record at a
// time and in order, never on the thread that logged; it may call any function here.
type LogFunc func(rec LogRecord, target, message string)

// The funcs set. As for the timeline, the library holds only a key: a record that arrives for
// a key no longer here is dropped.
var logs = struct {
	set     sync.Mutex // orders LogSetCallback calls, so that current follows the library
	mu      sync.RWMutex
	fns     map[uintptr]LogFunc // by key
	current uintptr             // the key in place; 0: none (stderr)
	next    uintptr
}{fns: map[uintptr]LogFunc{}}

func logFunc(key uintptr) LogFunc {
	logs.mu.RLock()
	defer logs.mu.RUnlock()
	return logs.fns[key]
}

// LogSetCallback is cuzk_log_set_callback: the library's log records go to fn instead of
// stderr (nil: back to stderr). Where RUST_LOG is not set, maxLevel (LogError ... LogTrace; 0:
// LogWarn) is the most verbose level passed on. Called outside a LogFunc, it returns once the
// records logged before the call have gone to the func before it, which is never called again;
// called inside one, it returns at once. Calls are serialized: one made inside a LogFunc while
// another call waits for that LogFunc answers StatusInCallback instead of waiting for ever.
// StatusUnsupported where the process already had a Rust logger.
func LogSetCallback(fn LogFunc, maxLevel uint32) error {
	if OnLogThread() {
		if !logs.set.TryLock() {
			return &Error{Status: StatusInCallback, Message: "another LogSetCallback is waiting for this log callback"}
		}
	} else {
		logs.set.Lock()
	}
	defer logs.set.Unlock()
	var key uintptr
	if fn != nil {
		logs.mu.Lock()
		logs.next++
		key = logs.next
		logs.fns[key] = fn
		logs.mu.Unlock()
	}
	var cerr C.cuzk_error
	err := takeError(C.cuzkGoLogSet(C.uintptr_t(key), C.uint32_t(maxLevel), &cerr), &cerr)
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if err != nil {
		delete(logs.fns, key)
		return err
	}
	// The library never calls the func before this one again.
	delete(logs.fns, logs.current)
	logs.current = key
	return nil
}

// OnLogThread reports whether the caller runs on the library's log thread: inside a LogFunc
// (a goroutine inside a cgo callback stays on the callback's thread).
func OnLogThread() bool {
	return C.cuzkGoOnLogThread() != 0
}

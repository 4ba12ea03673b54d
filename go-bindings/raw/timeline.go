package raw

/*
#include "cuzk.h"

// Defined in timeline.c.
extern cuzk_status cuzkGoTimelineRegister(uintptr_t key, uint64_t *handle_out, cuzk_error *err);
*/
import "C"

import "sync"

// TimelineFunc receives one timeline event (a copy) and its detail text. It runs on the
// engine's timeline thread, one event at a time and in order, and should return quickly; what
// it may call is the C API's cuzk_timeline_cb (engine start and shutdown, SealCommitPhase2,
// GeneratePost and a waiting Await answer StatusInCallback there).
type TimelineFunc func(ev TimelineEvent, detail string)

// The registered funcs. The library holds only a key, as its userdata, never a Go pointer: an
// event that arrives for a key no longer here is dropped instead of touching freed state.
var timeline = struct {
	mu   sync.RWMutex
	fns  map[uintptr]TimelineFunc // by key
	keys map[uint64]uintptr       // the key of each library handle
	next uintptr
}{fns: map[uintptr]TimelineFunc{}, keys: map[uint64]uintptr{}}

func timelineFunc(key uintptr) TimelineFunc {
	timeline.mu.RLock()
	defer timeline.mu.RUnlock()
	return timeline.fns[key]
}

// TimelineRegister is cuzk_timeline_register: fn sees every event recorded after it returns,
// until TimelineUnregister(handle). StatusNotRunning without an engine; a nil fn is
// StatusInvalidArgument.
func TimelineRegister(fn TimelineFunc) (handle uint64, err error) {
	if fn == nil {
		return 0, &Error{Status: StatusInvalidArgument, Message: "nil timeline func"}
	}
	timeline.mu.Lock()
	timeline.next++
	key := timeline.next
	timeline.fns[key] = fn
	timeline.mu.Unlock()
	var h C.uint64_t
	var cerr C.cuzk_error
	err = takeError(C.cuzkGoTimelineRegister(C.uintptr_t(key), &h, &cerr), &cerr)
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	if err != nil {
		delete(timeline.fns, key)
		return 0, err
	}
	timeline.keys[uint64(h)] = key
	return uint64(h), nil
}

// TimelineUnregister is cuzk_timeline_unregister_err. Called outside the func, it returns once
// the events recorded before the call are delivered and the func is never called again; from
// inside it, at once, and the func is not called after its running call. An unknown handle, or
// no engine, is not an error. The func is forgotten whatever the result.
func TimelineUnregister(handle uint64) error {
	var cerr C.cuzk_error
	err := takeError(C.cuzk_timeline_unregister_err(C.uint64_t(handle), &cerr), &cerr)
	timeline.mu.Lock()
	defer timeline.mu.Unlock()
	if key, ok := timeline.keys[handle]; ok {
		delete(timeline.keys, handle)
		delete(timeline.fns, key)
	}
	return err
}

package raw

// The //export trampolines live in a file of their own: a file with //export may only have
// declarations, not definitions, in its C preamble.

/*
#include "cuzk.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"
)

// goCuzkTimeline is called by timeline.c's trampoline on the engine's timeline thread, with
// the key registered as userdata. A key no longer registered is dropped.
//
//export goCuzkTimeline
func goCuzkTimeline(key C.uintptr_t, ev *C.cuzk_timeline_event) {
	fn := timelineFunc(uintptr(key))
	if fn == nil {
		return
	}
	e := *(*TimelineEvent)(unsafe.Pointer(ev))
	e.detail = nil // valid only during the call
	detail := ""
	if ev.detail != nil {
		detail = C.GoString(ev.detail)
	}
	defer recoverCallback("timeline")
	fn(e, detail)
}

// goCuzkLog is called by logs.c's trampoline on the library's log thread, with the key set as
// userdata. A key no longer in place is dropped.
//
//export goCuzkLog
func goCuzkLog(key C.uintptr_t, rec *C.cuzk_log_record) {
	fn := logFunc(uintptr(key))
	if fn == nil {
		return
	}
	r := *(*LogRecord)(unsafe.Pointer(rec))
	r.target, r.message = nil, nil // valid only during the call
	target, message := "", ""
	if rec.target != nil {
		target = C.GoString(rec.target)
	}
	if rec.message != nil {
		message = C.GoString(rec.message)
	}
	defer recoverCallback("log")
	fn(r, target, message)
}

// recoverCallback stops a panic of a Go callback at the trampoline: it cannot unwind through
// the library's C frames, and the library's thread must go on.
func recoverCallback(what string) {
	if p := recover(); p != nil {
		fmt.Fprintf(os.Stderr, "cuzk: panic in a %s callback recovered: %v\n", what, p)
	}
}

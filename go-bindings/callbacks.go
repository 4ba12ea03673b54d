package cuzk

// The //export trampolines live in a file of their own: a file with //export may only have
// declarations, not definitions, in its C preamble.

/*
#include "cuzk.h"
*/
import "C"

import "time"

//export goCuzkTimeline
func goCuzkTimeline(handle C.uintptr_t, ev *C.cuzk_timeline_event) {
	e := Event{
		Kind:      EventKind(ev.kind),
		Since:     time.Duration(ev.t_us) * time.Microsecond,
		Job:       JobID(ev.job_id),
		Partition: uint32(ev.partition),
		Worker:    uint32(ev.worker),
		Value:     uint64(ev.value),
	}
	if ev.detail != nil {
		e.Detail = C.GoString(ev.detail)
	}
	deliver(uintptr(handle), e)
}

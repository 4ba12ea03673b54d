package cuzk

/*
#include "cuzk.h"
extern cuzk_status cuzkGoTimelineRegister(uintptr_t handle, uint64_t *id_out, cuzk_error *err);
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind is the kind of a timeline event; the numbers match cuzk.h.
type EventKind uint32

// Event kinds.
const (
	JobQueued    EventKind = 0
	SynthStart   EventKind = 1
	SynthEnd     EventKind = 2
	ChanSend     EventKind = 3
	GPUPickup    EventKind = 4
	GPUStart     EventKind = 5
	GPUEnd       EventKind = 6
	JobDone      EventKind = 7
	JobFailedEv  EventKind = 8
	JobCancelled EventKind = 9
)

var kindNames = [...]string{"JOB_QUEUED", "SYNTH_START", "SYNTH_END", "CHAN_SEND", "GPU_PICKUP",
	"GPU_START", "GPU_END", "JOB_DONE", "JOB_FAILED", "JOB_CANCELLED"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EVENT(%d)", uint32(k))
}

// NoPartition is the Partition of job-level events.
const NoPartition = ^uint32(0)

// Event is one timeline event.
type Event struct {
	Kind EventKind
	// Since is the time since the engine started (monotonic).
	Since     time.Duration
	Job       JobID
	Partition uint32
	// Worker is the synthesis worker (SYNTH_*) or device worker (GPU_*) index.
	Worker uint32
	// Value: bytes reserved (SYNTH_START), milliseconds (SYNTH_END, GPU_END, JOB_*),
	// partitions (JOB_QUEUED).
	Value  uint64
	Detail string
}

var (
	panicCount   atomic.Uint64
	panicHandler atomic.Pointer[func(any)]
)

// SetPanicHandler sets what happens to a panic recovered from a timeline callback (default:
// a line on stderr). The panic never reaches the host or the library.
func SetPanicHandler(f func(recovered any)) { panicHandler.Store(&f) }

// TimelinePanics is the number of panics recovered from timeline callbacks.
func TimelinePanics() uint64 { return panicCount.Load() }

type sink struct {
	fn func(Event)
}

// deliver runs the Go callback with panic recovery. Called by the exported trampoline.
func deliver(h uintptr, ev Event) {
	s, ok := cgo.Handle(h).Value().(*sink)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			panicCount.Add(1)
			if f := panicHandler.Load(); f != nil && *f != nil {
				(*f)(r)
			} else {
				fmt.Fprintf(os.Stderr, "cuzk: panic in timeline callback recovered: %v\n", r)
			}
		}
	}()
	s.fn(ev)
}

// OnTimeline registers f for the running engine's events and returns the func that
// unregisters it. f runs on library worker threads, possibly concurrently; it must be quick
// and must not call the engine. After the returned func returns, f is not running and is
// never called again. The returned func may be called more than once.
func (e *Engine) OnTimeline(f func(Event)) (unregister func(), err error) {
	h := cgo.NewHandle(&sink{fn: f})
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzkGoTimelineRegister(C.uintptr_t(h), &id, &cerr), &cerr); err != nil {
		h.Delete()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			C.cuzk_timeline_unregister(id)
			h.Delete()
		})
	}, nil
}

package cuzk

/*
#include "cuzk.h"
extern cuzk_status cuzkGoTimelineRegister(uintptr_t handle, uint64_t *id_out, cuzk_error *err);
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind is the kind of a timeline event; the numbers come from cuzk.h.
type EventKind uint32

// Event kinds.
const (
	JobQueued    EventKind = C.CUZK_EVENT_KIND_JOB_QUEUED
	SynthStart   EventKind = C.CUZK_EVENT_KIND_SYNTH_START
	SynthEnd     EventKind = C.CUZK_EVENT_KIND_SYNTH_END
	ChanSend     EventKind = C.CUZK_EVENT_KIND_CHAN_SEND
	GPUPickup    EventKind = C.CUZK_EVENT_KIND_GPU_PICKUP
	GPUStart     EventKind = C.CUZK_EVENT_KIND_GPU_START
	GPUEnd       EventKind = C.CUZK_EVENT_KIND_GPU_END
	JobDone      EventKind = C.CUZK_EVENT_KIND_JOB_DONE
	JobFailedEv  EventKind = C.CUZK_EVENT_KIND_JOB_FAILED
	JobCancelled EventKind = C.CUZK_EVENT_KIND_JOB_CANCELLED
)

var kindNames = map[EventKind]string{JobQueued: "JOB_QUEUED", SynthStart: "SYNTH_START",
	SynthEnd: "SYNTH_END", ChanSend: "CHAN_SEND", GPUPickup: "GPU_PICKUP", GPUStart: "GPU_START",
	GPUEnd: "GPU_END", JobDone: "JOB_DONE", JobFailedEv: "JOB_FAILED", JobCancelled: "JOB_CANCELLED"}

func (k EventKind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("EVENT(%d)", uint32(k))
}

// NoPartition is the Partition of job-level events.
const NoPartition = uint32(C.CUZK_NO_PARTITION)

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

// SetPanicHandler sets what happens to a panic recovered from a timeline callback or a
// [SetLogger] logger's handler (default: a line on stderr). The panic never reaches the host
// or the library.
func SetPanicHandler(f func(recovered any)) { panicHandler.Store(&f) }

// TimelinePanics is the number of panics recovered from timeline callbacks and log handlers.
func TimelinePanics() uint64 { return panicCount.Load() }

type sink struct {
	fn func(Event)
}

// The callbacks by key. The library only holds the key (as its userdata), so an event that
// arrives for a key no longer here is dropped instead of touching freed state.
var (
	sinksMu sync.RWMutex
	sinks   = map[uintptr]*sink{}
	nextKey uintptr
)

// deliver runs the Go callback with panic recovery. Called by the exported trampoline.
func deliver(key uintptr, ev Event) {
	sinksMu.RLock()
	s := sinks[key]
	sinksMu.RUnlock()
	if s == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			reportPanic(r)
		}
	}()
	s.fn(ev)
}

// reportPanic counts a panic recovered from a callback and hands it to the panic handler.
func reportPanic(r any) {
	panicCount.Add(1)
	if f := panicHandler.Load(); f != nil && *f != nil {
		(*f)(r)
	} else {
		fmt.Fprintf(os.Stderr, "cuzk: panic in a callback recovered: %v\n", r)
	}
}

// OnTimeline registers f for the running engine's events and returns the func that
// unregisters it. f runs on the engine's timeline thread, one event at a time, in order; it
// should return quickly. It may call Submit, Cancel, State, Status-like calls and the returned
// unregister func (the usual "stop listening after my job's JobDone" works); Close, Start,
// SealCommitPhase2 and a waiting Await return ErrInCallback there. When unregister returns,
// f has seen every event recorded before the call (unless called from f itself) and is never
// called again. The returned func may be called more than once, and after Close.
func (e *Engine) OnTimeline(f func(Event)) (unregister func(), err error) {
	sinksMu.Lock()
	nextKey++
	key := nextKey
	sinks[key] = &sink{fn: f}
	sinksMu.Unlock()
	forget := func() {
		sinksMu.Lock()
		delete(sinks, key)
		sinksMu.Unlock()
	}
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzkGoTimelineRegister(C.uintptr_t(key), &id, &cerr), &cerr); err != nil {
		forget()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			C.cuzk_timeline_unregister(id)
			forget()
		})
	}, nil
}

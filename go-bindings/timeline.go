package cuzk

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
)

// EventKind is the kind of a timeline event; the numbers come from cuzk.h.
type EventKind uint32

// Event kinds.
const (
	JobQueued    EventKind = EventKind(raw.EventKindJobQueued)
	SynthStart   EventKind = EventKind(raw.EventKindSynthStart)
	SynthEnd     EventKind = EventKind(raw.EventKindSynthEnd)
	ChanSend     EventKind = EventKind(raw.EventKindChanSend)
	GPUPickup    EventKind = EventKind(raw.EventKindGPUPickup)
	GPUStart     EventKind = EventKind(raw.EventKindGPUStart)
	GPUEnd       EventKind = EventKind(raw.EventKindGPUEnd)
	JobDone      EventKind = EventKind(raw.EventKindJobDone)
	JobFailedEv  EventKind = EventKind(raw.EventKindJobFailed)
	JobCancelled EventKind = EventKind(raw.EventKindJobCancelled)
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
const NoPartition = uint32(raw.NoPartition)

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

// deliver runs the Go callback with panic recovery, on the engine's timeline thread.
func deliver(f func(Event), ev raw.TimelineEvent, detail string) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic(r)
		}
	}()
	f(Event{
		Kind:      EventKind(ev.Kind),
		Since:     time.Duration(ev.TUs) * time.Microsecond,
		Job:       JobID(ev.JobID),
		Partition: ev.Partition,
		Worker:    ev.Worker,
		Value:     ev.Value,
		Detail:    detail,
	})
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
	// raw keeps f in its table by key; the library holds only that key, so an event that
	// arrives after unregister is dropped instead of touching freed state.
	h, err := raw.TimelineRegister(func(ev raw.TimelineEvent, detail string) { deliver(f, ev, detail) })
	if err != nil {
		return nil, fromRaw(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Fails only on an internal fault; f is forgotten either way.
			_ = raw.TimelineUnregister(h)
		})
	}, nil
}

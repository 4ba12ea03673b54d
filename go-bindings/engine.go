package cuzk

/*
#include <stdlib.h>
#include <string.h>
#include "cuzk.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

// Config configures the engine. The zero value means defaults.
type Config struct {
	// SynthesisWorkers is the number of partitions synthesized at once (0: automatic).
	SynthesisWorkers uint32
	// SynthesisLookahead is how many synthesized partitions may wait for a prover before
	// synthesis pauses (0: automatic, two prover calls' worth: 2 for the CPU prover,
	// 2 × GPUs × partitions per GPU call for the GPU prover).
	SynthesisLookahead uint32
	// MemoryBudget in bytes for resident parameters plus in-flight partitions (0: 90% of the
	// memory available at start).
	MemoryBudget uint64
	// ParamsDir holds the .params/.vk files ("": FIL_PROOFS_PARAMETER_CACHE, else
	// /var/tmp/filecoin-proof-parameters).
	ParamsDir string
	// DisableSelfCheck skips verifying proofs before returning them. Never in production.
	DisableSelfCheck bool
	// TimelineStderr writes TIMELINE,... log lines to stderr.
	TimelineStderr bool
	// JobRetention is how long a finished job's result waits for its Await before it is
	// dropped (0: CUZK_JOB_RETENTION_S, else 15 minutes; a cancelled job at most a minute).
	JobRetention time.Duration
	// MaxJobs bounds the jobs queued or running at once (0: 256); Submit beyond it returns
	// ErrResourceExhausted.
	MaxJobs uint32
	// MaxC1Bytes bounds the C1 output accepted (0: 512 MiB); larger is ErrInvalidInput.
	MaxC1Bytes uint64
	// DeviceCooldown is how long a GPU taken out of service after repeated faults waits before
	// it is probed and put back (0: CUZK_DEVICE_COOLDOWN_S, else 60 s).
	DeviceCooldown time.Duration
}

// JobID identifies a submitted job.
type JobID uint64

// Request is one C2 job.
type Request struct {
	// Phase1Output is the C1 output: SealCommitPhase1Output JSON or a Commit2In envelope.
	Phase1Output []byte
	SectorNum    abi.SectorNumber
	// ProverID is usually ProverID(minerID).
	ProverID [32]byte
	// Priority: higher runs first.
	Priority int32
	// FixturePartitions / FixtureLayers select a test fixture shape (test sector sizes only).
	FixturePartitions uint32
	FixtureLayers     uint32
}

// JobState is what State reports.
type JobState int

const (
	// JobRunning: queued, synthesizing or proving.
	JobRunning JobState = iota
	// JobSucceeded: Await returns the proof at once.
	JobSucceeded
	// JobFailed: Await returns the error at once.
	JobFailed
)

// Engine is a handle on the process-wide engine.
type Engine struct{}

// Start starts the process-wide engine, or returns a handle on the running one when cfg
// matches its configuration (ErrAlreadyRunning otherwise). A negative duration, or one longer
// than a week, is ErrInvalidArgument.
func Start(cfg Config) (*Engine, error) {
	// A negative duration would reach C as a huge unsigned count of milliseconds.
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"JobRetention", cfg.JobRetention}, {"DeviceCooldown", cfg.DeviceCooldown}} {
		if d.v < 0 {
			return nil, &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("Config.%s is negative (%v)", d.name, d.v)}
		}
	}
	var c C.cuzk_config
	C.cuzk_config_default(&c)
	c.synthesis_workers = C.uint32_t(cfg.SynthesisWorkers)
	c.synthesis_lookahead = C.uint32_t(cfg.SynthesisLookahead)
	c.memory_budget_bytes = C.uint64_t(cfg.MemoryBudget)
	c.self_check = boolByte(!cfg.DisableSelfCheck)
	if cfg.TimelineStderr {
		c.timeline_stderr = 1
	}
	c.job_retention_ms = C.uint64_t(cfg.JobRetention.Milliseconds())
	c.max_jobs = C.uint32_t(cfg.MaxJobs)
	c.max_c1_bytes = C.uint64_t(cfg.MaxC1Bytes)
	c.device_cooldown_ms = C.uint64_t(cfg.DeviceCooldown.Milliseconds())
	if cfg.ParamsDir != "" {
		dir := C.CString(cfg.ParamsDir)
		defer C.free(unsafe.Pointer(dir))
		c.params_dir = dir
	}
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_engine_start(&c, &cerr), &cerr); err != nil {
		return nil, err
	}
	return &Engine{}, nil
}

// Close shuts the engine down and waits for its threads to stop: every unfinished job ends
// with ErrNotRunning (blocked Awaits return), synthesis in progress is abandoned, partitions on
// a GPU finish their call, the timeline delivers what it holds. It may be called more than
// once, and concurrently (a second call waits for the first). From a timeline callback it
// returns ErrInCallback.
func (e *Engine) Close() error {
	var cerr C.cuzk_error
	return takeError(C.cuzk_engine_shutdown_err(&cerr), &cerr)
}

func boolByte(b bool) C.uint8_t {
	if b {
		return 1
	}
	return 0
}

// Submit validates a job and queues it. Validation errors (malformed C1 output, wrong shape,
// a prover id or sector number that does not match the C1 output) are returned here.
func (e *Engine) Submit(ctx context.Context, req Request) (JobID, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(req.Phase1Output) == 0 {
		return 0, &Error{Status: StatusInvalidInput, Message: "C1 output is empty"}
	}
	// The request struct travels to C with a pointer in it, so the C1 bytes are copied into C
	// memory for the call (cgo forbids Go pointers inside memory passed to C).
	c1 := C.CBytes(req.Phase1Output)
	defer C.free(c1)
	var r C.cuzk_job_request
	C.cuzk_job_request_default(&r)
	r.priority = C.int32_t(req.Priority)
	r.c1_ptr = (*C.uint8_t)(c1)
	r.c1_len = C.size_t(len(req.Phase1Output))
	r.sector_id = C.uint64_t(req.SectorNum)
	for i, b := range req.ProverID {
		r.prover_id[i] = C.uint8_t(b)
	}
	r.fixture_partitions = C.uint32_t(req.FixturePartitions)
	r.fixture_layers = C.uint32_t(req.FixtureLayers)
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_submit(&r, &id, &cerr), &cerr); err != nil {
		return 0, err
	}
	return JobID(id), nil
}

// awaitSlice bounds each blocking wait in the library, so that a cancelled context is noticed
// promptly.
const awaitSlice = 100 * time.Millisecond

// Await waits for a job and returns its proof (partitions × 192 bytes). If ctx ends first,
// the job is cancelled in the engine and the error matches both ctx.Err() and ErrCancelled.
// After Await returns, the job is gone: a second Await returns ErrNotFound.
func (e *Engine) Await(ctx context.Context, id JobID) ([]byte, error) {
	for {
		if err := ctx.Err(); err != nil {
			_ = e.Cancel(id)
			e.reap(id)
			return nil, &cancelledError{ctxErr: err, job: id}
		}
		var out C.cuzk_bytes
		var cerr C.cuzk_error
		st := C.cuzk_await(C.uint64_t(id), C.int64_t(awaitSlice.Milliseconds()), &out, &cerr)
		if st == C.CUZK_STATUS_TIMEOUT {
			C.cuzk_error_free(&cerr)
			continue
		}
		if err := takeError(st, &cerr); err != nil {
			return nil, err
		}
		return takeBytes(&out), nil
	}
}

// reap removes a finished job from the engine's table without waiting (its result is dropped).
func (e *Engine) reap(id JobID) {
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if C.cuzk_await(C.uint64_t(id), 0, &out, &cerr) == C.CUZK_STATUS_OK {
		C.cuzk_bytes_free(&out)
	}
	C.cuzk_error_free(&cerr)
}

// Prove submits a job and awaits it.
func (e *Engine) Prove(ctx context.Context, req Request) ([]byte, error) {
	id, err := e.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.Await(ctx, id)
}

// Cancel cancels a job: queued partitions are dropped, running ones abandoned, memory freed;
// Await returns ErrCancelled. Cancelling a finished job changes nothing.
func (e *Engine) Cancel(id JobID) error {
	var cerr C.cuzk_error
	return takeError(C.cuzk_cancel(C.uint64_t(id), &cerr), &cerr)
}

// SetDeviceEnabled takes prover device i (its index in the engine's device list) out of
// service, or puts it back. Partitions being proved finish; later ones go to the other devices,
// or to the CPU when no GPU is left. The CPU prover cannot leave service (ErrUnsupported-class
// error); an unknown index is an invalid-argument error.
func (e *Engine) SetDeviceEnabled(i int, enabled bool) error {
	if i < 0 || uint64(i) > math.MaxUint32 {
		return &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("device %d out of range", i)}
	}
	var cerr C.cuzk_error
	return takeError(C.cuzk_device_set_enabled(C.uint32_t(i), C.bool(enabled), &cerr), &cerr)
}

// State reports a job's state without waiting.
func (e *Engine) State(id JobID) (JobState, error) {
	var st C.cuzk_job_state
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_poll(C.uint64_t(id), &st, &cerr), &cerr); err != nil {
		return JobFailed, err
	}
	switch st {
	case C.CUZK_JOB_STATE_RUNNING:
		return JobRunning, nil
	case C.CUZK_JOB_STATE_SUCCEEDED:
		return JobSucceeded, nil
	default:
		return JobFailed, nil
	}
}

// ProverID derives the 32-byte prover id from a miner actor id the way filecoin-ffi does:
// the unsigned LEB128 varint of the id (its ID address payload), zero-padded.
func ProverID(minerID abi.ActorID) [32]byte {
	var out [32]byte
	v := uint64(minerID)
	for i := 0; ; i++ {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			out[i] = b
			return out
		}
		out[i] = b | 0x80
	}
}

// SealCommitPhase2 is the drop-in for filecoin-ffi's ffi.SealCommitPhase2: it proves a C1
// output for sectorNum and minerID and returns partitions × 192 verified proof bytes. It
// starts the engine with defaults if none runs, and blocks until done.
func SealCommitPhase2(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) {
	if len(phase1Output) == 0 {
		return nil, &Error{Status: StatusInvalidInput, Message: "C1 output is empty"}
	}
	pid := ProverID(minerID)
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	st := C.cuzk_seal_commit_phase2(goBytesPtr(phase1Output), C.size_t(len(phase1Output)),
		C.uint64_t(sectorNum), (*[32]C.uint8_t)(unsafe.Pointer(&pid)), &out, &cerr)
	runtime.KeepAlive(phase1Output)
	runtime.KeepAlive(&pid)
	if err := takeError(st, &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// VerifySeal checks a proof for a C1 output's sector with filecoin-proofs' own verify_seal
// (the verifier Lotus and Curio run). It needs no running engine.
func VerifySeal(phase1Output []byte, sectorNum abi.SectorNumber, proverID [32]byte, proof []byte) (bool, error) {
	if len(phase1Output) == 0 || len(proof) == 0 {
		return false, &Error{Status: StatusInvalidArgument, Message: "empty C1 output or proof"}
	}
	var valid C.bool
	var cerr C.cuzk_error
	st := C.cuzk_verify_seal(goBytesPtr(phase1Output), C.size_t(len(phase1Output)), C.uint64_t(sectorNum),
		(*[32]C.uint8_t)(unsafe.Pointer(&proverID)), goBytesPtr(proof), C.size_t(len(proof)), &valid, &cerr)
	runtime.KeepAlive(phase1Output)
	runtime.KeepAlive(proof)
	runtime.KeepAlive(&proverID)
	if err := takeError(st, &cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}

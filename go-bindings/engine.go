package cuzk

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/filecoin-project/go-state-types/abi"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
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
	c := raw.ConfigDefault()
	c.SynthesisWorkers = cfg.SynthesisWorkers
	c.SynthesisLookahead = cfg.SynthesisLookahead
	c.MemoryBudgetBytes = cfg.MemoryBudget
	c.SelfCheck = boolByte(!cfg.DisableSelfCheck)
	if cfg.TimelineStderr {
		c.TimelineStderr = 1
	}
	c.JobRetentionMs = uint64(cfg.JobRetention.Milliseconds())
	c.MaxJobs = cfg.MaxJobs
	c.MaxC1Bytes = cfg.MaxC1Bytes
	c.DeviceCooldownMs = uint64(cfg.DeviceCooldown.Milliseconds())
	// An empty ParamsDir is NULL to the library: its default.
	if err := raw.EngineStart(c, cfg.ParamsDir, ""); err != nil {
		return nil, fromRaw(err)
	}
	return &Engine{}, nil
}

// Close shuts the engine down and waits for its threads to stop: every unfinished job ends
// with ErrNotRunning (blocked Awaits return), synthesis in progress is abandoned, partitions on
// a GPU finish their call, the timeline delivers what it holds. It may be called more than
// once, and concurrently (a second call waits for the first). From a timeline callback it
// returns ErrInCallback.
func (e *Engine) Close() error {
	return fromRaw(raw.EngineShutdown())
}

func boolByte(b bool) uint8 {
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
	// The request struct travels to C with a pointer in it, so raw copies the C1 bytes into C
	// memory for the call (cgo forbids Go pointers inside memory passed to C).
	r := raw.JobRequestDefault()
	r.Priority = req.Priority
	r.SectorID = uint64(req.SectorNum)
	r.ProverID = req.ProverID
	r.FixturePartitions = req.FixturePartitions
	r.FixtureLayers = req.FixtureLayers
	id, err := raw.Submit(r, req.Phase1Output)
	if err != nil {
		return 0, fromRaw(err)
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
		proof, err := raw.Await(uint64(id), awaitSlice.Milliseconds())
		if re, ok := err.(*raw.Error); ok && re.Status == raw.StatusTimeout {
			continue
		}
		if err != nil {
			return nil, fromRaw(err)
		}
		return proof, nil
	}
}

// reap removes a finished job from the engine's table without waiting (its result is dropped).
func (e *Engine) reap(id JobID) {
	_, _ = raw.Await(uint64(id), 0)
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
	return fromRaw(raw.Cancel(uint64(id)))
}

// SetDeviceEnabled takes prover device i (its index in the engine's device list) out of
// service, or puts it back. Partitions being proved finish; later ones go to the other devices,
// or to the CPU when no GPU is left. The CPU prover cannot leave service (ErrUnsupported-class
// error); an unknown index is an invalid-argument error.
func (e *Engine) SetDeviceEnabled(i int, enabled bool) error {
	if i < 0 || uint64(i) > math.MaxUint32 {
		return &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("device %d out of range", i)}
	}
	return fromRaw(raw.DeviceSetEnabled(uint32(i), enabled))
}

// State reports a job's state without waiting.
func (e *Engine) State(id JobID) (JobState, error) {
	st, err := raw.Poll(uint64(id))
	if err != nil {
		return JobFailed, fromRaw(err)
	}
	switch st {
	case raw.JobStateRunning:
		return JobRunning, nil
	case raw.JobStateSucceeded:
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
// output for sectorNum and minerID and returns partitions × 192 verified proof bytes, or for
// non-interactive PoRep (registered proofs 15 to 19) their SnarkPack v2 aggregate, verified by
// filecoin-proofs' verify_seal (the SRS is read from FIL_PROOFS_PARAMETER_CACHE). It starts the
// engine with defaults if none runs, and blocks until done.
func SealCommitPhase2(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) {
	if len(phase1Output) == 0 {
		return nil, &Error{Status: StatusInvalidInput, Message: "C1 output is empty"}
	}
	proof, err := raw.SealCommitPhase2(phase1Output, uint64(sectorNum), ProverID(minerID))
	if err != nil {
		return nil, fromRaw(err)
	}
	return proof, nil
}

// SealCommitPhase2CircuitProofs is the drop-in for filecoin-ffi's
// ffi.SealCommitPhase2CircuitProofs: a non-interactive PoRep sector's partition proofs (126 × 192
// bytes at 32 GiB), each verified, not aggregated, for aggregating several sectors together
// (AggregateSealProofs). The C1 output's replica id is taken as it is, as filecoin-ffi's call
// takes no miner. For interactive proof types it returns what SealCommitPhase2 returns. It
// starts the engine with defaults if none runs, and blocks until done.
func SealCommitPhase2CircuitProofs(phase1Output []byte, sectorNum abi.SectorNumber) ([]byte, error) {
	if len(phase1Output) == 0 {
		return nil, &Error{Status: StatusInvalidInput, Message: "C1 output is empty"}
	}
	proof, err := raw.SealCommitPhase2CircuitProofs(phase1Output, uint64(sectorNum), nil)
	if err != nil {
		return nil, fromRaw(err)
	}
	return proof, nil
}

// VerifySeal checks a proof for a C1 output's sector with filecoin-proofs' own verify_seal
// (the verifier Lotus and Curio run). It needs no running engine.
func VerifySeal(phase1Output []byte, sectorNum abi.SectorNumber, proverID [32]byte, proof []byte) (bool, error) {
	if len(phase1Output) == 0 || len(proof) == 0 {
		return false, &Error{Status: StatusInvalidArgument, Message: "empty C1 output or proof"}
	}
	valid, err := raw.VerifySeal(phase1Output, uint64(sectorNum), proverID, proof)
	if err != nil {
		return false, fromRaw(err)
	}
	return valid, nil
}

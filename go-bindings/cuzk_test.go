package cuzk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/filecoin-project/go-state-types/abi"
)

// The tests share the process-wide engine and the 2KiB fixture `make fixtures` creates:
// CUZK_TEST_C1 (default: $FIL_PROOFS_PARAMETER_CACHE/cuzk-fixtures/2KiB.c1.json), sealed for
// sector 1 of miner 1000.
const (
	testSector abi.SectorNumber = 1
	testMiner  abi.ActorID      = 1000
)

var (
	fixture []byte
	engine  *Engine
)

func paramsDir() string {
	if d := os.Getenv("FIL_PROOFS_PARAMETER_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/filecoin-proof-parameters"
}

func TestMain(m *testing.M) {
	path := os.Getenv("CUZK_TEST_C1")
	if path == "" {
		path = filepath.Join(paramsDir(), "cuzk-fixtures", "2KiB.c1.json")
	}
	var err error
	fixture, err = os.ReadFile(path)
	if err != nil {
		// A missing fixture is a failure, not a skip: run `make fixtures` first.
		println("cannot read the 2KiB fixture (run `make fixtures`):", err.Error())
		os.Exit(1)
	}
	engine, err = Start(Config{ParamsDir: paramsDir()})
	if err != nil {
		println("engine start:", err.Error())
		os.Exit(1)
	}
	code := m.Run()
	if err := engine.Close(); err != nil {
		println("close:", err.Error())
		code = 1
	}
	if err := engine.Close(); err != nil { // twice is fine
		println("second close:", err.Error())
		code = 1
	}
	os.Exit(code)
}

func verify(t *testing.T, proof []byte) {
	t.Helper()
	ok, err := VerifySeal(fixture, testSector, ProverID(testMiner), proof)
	if err != nil || !ok {
		t.Fatalf("proof does not verify: ok=%v err=%v", ok, err)
	}
}

func TestProverIDMatchesFilecoinFFI(t *testing.T) {
	for _, c := range []struct {
		miner abi.ActorID
		want  []byte
	}{{42, []byte{0x2a, 0}}, {1000, []byte{0xe8, 0x07, 0}}, {0, []byte{0, 0}}} {
		got := ProverID(c.miner)
		if string(got[:len(c.want)]) != string(c.want) {
			t.Errorf("ProverID(%d) = %x, want prefix %x", c.miner, got[:4], c.want)
		}
	}
}

// Negative durations and a week and more are refused at Start (ErrInvalidArgument). The
// hazard: a negative DeviceCooldown reaches C as a huge count of milliseconds, which overflows
// a deadline on a prover worker later.
func TestOutOfRangeDurationsAreInvalidArguments(t *testing.T) {
	for _, cfg := range []Config{
		{ParamsDir: paramsDir(), DeviceCooldown: -time.Second},
		{ParamsDir: paramsDir(), JobRetention: -time.Minute},
		{ParamsDir: paramsDir(), DeviceCooldown: 8 * 24 * time.Hour},
	} {
		if _, err := Start(cfg); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("Start(%+v): %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

func TestGarbageInputIsAnError(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("garbage"), fixture[:len(fixture)/2]} {
		_, err := SealCommitPhase2(in, testSector, testMiner)
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("input %.20q: err = %v, want ErrInvalidInput", in, err)
		}
	}
	if _, err := SealCommitPhase2(fixture, testSector, testMiner+1); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("wrong miner: err = %v", err)
	}
	for _, in := range [][]byte{nil, []byte("garbage"), fixture[:len(fixture)/2]} {
		if _, err := SealCommitPhase2CircuitProofs(in, testSector); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("circuit proofs of %.20q: err = %v, want ErrInvalidInput", in, err)
		}
	}
	if _, err := engine.Submit(context.Background(), Request{Phase1Output: []byte("{}"), SectorNum: 1}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("submit garbage: err = %v", err)
	}
	if _, err := engine.Await(context.Background(), 123456); !errors.Is(err, ErrNotFound) {
		t.Errorf("await unknown: err = %v", err)
	}
	if err := engine.SetDeviceEnabled(99, false); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown device: err = %v", err)
	}
	if err := engine.SetDeviceEnabled(-1, true); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative device: err = %v", err)
	}
	if ok, err := VerifySeal(fixture, testSector, ProverID(testMiner), []byte{1, 2, 3}); err != nil {
		t.Errorf("malformed proof should be invalid, not an error: %v", err)
	} else if ok {
		t.Errorf("a malformed proof was accepted")
	}
}

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) forJob(id JobID) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Job == id {
			out = append(out, e)
		}
	}
	return out
}

// A context cancelled mid-proof returns promptly with a cancellation error, and the engine
// keeps serving: the drop-in then proves the fixture, the proof verifies, and the timeline
// shows every event of its partition in order.
func TestCancelThenDropInAndTimeline(t *testing.T) {
	rec := &recorder{}
	unregister, err := engine.OnTimeline(rec.add)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()

	started := make(chan JobID, 4)
	stopWatch, err := engine.OnTimeline(func(e Event) {
		if e.Kind == SynthStart {
			select {
			case started <- e.Job:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	id, err := engine.Submit(ctx, Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("synthesis never started")
	}
	stopWatch()
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	t0 := time.Now()
	_, err = engine.Await(ctx, id)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("await after cancel: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("cancellation took %v", d)
	}
	// Await reaped the cancelled job: nothing is left behind in the engine.
	if _, err := engine.State(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("state after cancelled await: %v", err)
	}

	proof, err := SealCommitPhase2(fixture, testSector, testMiner)
	if err != nil {
		t.Fatal(err)
	}
	if len(proof) != 192 {
		t.Fatalf("proof is %d bytes", len(proof))
	}
	verify(t, proof)
	if ok, err := VerifySeal(fixture, testSector+1, ProverID(testMiner), proof); err != nil || ok {
		t.Fatalf("proof verified for the wrong sector: %v %v", ok, err)
	}

	// The drop-in's job is the newest one seen.
	unregister()
	var last JobID
	for _, e := range rec.events {
		if e.Kind == JobDone && e.Job > last {
			last = e.Job
		}
	}
	checkOrder(t, rec.forJob(last), 1)
	// The cancelled job ends JOB_CANCELLED and never reaches the prover.
	cancelled := false
	for _, e := range rec.forJob(id) {
		switch e.Kind {
		case JobCancelled:
			cancelled = true
		case GPUPickup, GPUStart, GPUEnd, JobDone:
			t.Fatalf("cancelled job reached %v: %v", e.Kind, rec.forJob(id))
		}
	}
	if !cancelled {
		t.Fatalf("no JOB_CANCELLED: %v", rec.forJob(id))
	}
}

// checkOrder: each partition has SYNTH_START < SYNTH_END <= CHAN_SEND <= GPU_PICKUP <=
// GPU_START < GPU_END, between JOB_QUEUED and JOB_DONE.
func checkOrder(t *testing.T, evs []Event, partitions int) {
	t.Helper()
	at := map[EventKind]map[uint32]time.Duration{}
	for _, e := range evs {
		if at[e.Kind] == nil {
			at[e.Kind] = map[uint32]time.Duration{}
		}
		if _, dup := at[e.Kind][e.Partition]; dup {
			t.Fatalf("duplicate %v for partition %d", e.Kind, e.Partition)
		}
		at[e.Kind][e.Partition] = e.Since
	}
	queued, ok1 := at[JobQueued][NoPartition]
	done, ok2 := at[JobDone][NoPartition]
	if !ok1 || !ok2 {
		t.Fatalf("missing JOB_QUEUED / JOB_DONE: %v", evs)
	}
	for p := uint32(0); p < uint32(partitions); p++ {
		seq := []EventKind{SynthStart, SynthEnd, ChanSend, GPUPickup, GPUStart, GPUEnd}
		prev := queued
		for i, k := range seq {
			ts, ok := at[k][p]
			if !ok {
				t.Fatalf("partition %d: no %v", p, k)
			}
			strict := k == SynthEnd || k == GPUEnd
			if ts < prev || (strict && ts == prev && i > 0) {
				t.Fatalf("partition %d: %v at %v before %v", p, k, ts, prev)
			}
			prev = ts
		}
		if prev > done {
			t.Fatalf("partition %d ends after JOB_DONE", p)
		}
	}
}

// N goroutines submit at once; every result verifies. N is 50 unless CUZK_GO_CONCURRENCY
// says otherwise (each 2KiB proof costs ~45 s of a 2-core machine's CPU).
func TestConcurrentSubmitters(t *testing.T) {
	n := 50
	if s := os.Getenv("CUZK_GO_CONCURRENCY"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("bad CUZK_GO_CONCURRENCY %q", s)
		}
		n = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	var wg sync.WaitGroup
	proofs := make([][]byte, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			proofs[i], errs[i] = engine.Prove(ctx, Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner), Priority: int32(i % 3)})
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		verify(t, proofs[i])
		seen[string(proofs[i])] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct proofs for %d jobs: proofs must be freshly randomized", len(seen), n)
	}
}

// A panic in a timeline callback is recovered and reported; after unregistering, the
// callback is never called again.
func TestTimelinePanicIsRecoveredAndUnregisterIsFinal(t *testing.T) {
	var recovered atomic.Int64
	SetPanicHandler(func(any) { recovered.Add(1) })
	defer SetPanicHandler(nil)
	var calls atomic.Int64
	unregister, err := engine.OnTimeline(func(e Event) {
		calls.Add(1)
		panic("callback bug")
	})
	if err != nil {
		t.Fatal(err)
	}
	// A job that fails validation emits nothing; a cancelled one emits JOB_QUEUED and JOB_CANCELLED.
	id, err := engine.Submit(context.Background(), Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := engine.State(id); err != nil || st != JobRunning {
		t.Fatalf("state after submit: %v %v", st, err)
	}
	if err := engine.Cancel(id); err != nil {
		t.Fatal(err)
	}
	if st, err := engine.State(id); err != nil || st != JobFailed {
		t.Fatalf("state after cancel: %v %v", st, err)
	}
	if _, err := engine.Await(context.Background(), id); !errors.Is(err, ErrCancelled) {
		t.Fatalf("await: %v", err)
	}
	unregister()
	unregister()
	n := calls.Load()
	if n < 2 || recovered.Load() != n {
		t.Fatalf("calls %d, recovered %d", n, recovered.Load())
	}
	id, err = engine.Submit(context.Background(), Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	if err != nil {
		t.Fatal(err)
	}
	_ = engine.Cancel(id)
	_, _ = engine.Await(context.Background(), id)
	if calls.Load() != n {
		t.Fatalf("callback called after unregister")
	}
}

// The natural pattern: a callback that stops listening once its job has ended. It may call
// the engine (State, Cancel, its own unregister) but not Close (ErrInCallback).
func TestCallbackUnregistersAfterItsJobEnds(t *testing.T) {
	done := make(chan struct{})
	var calls atomic.Int64
	var unregister func()
	var mu sync.Mutex
	var job JobID
	var closeErr, stateErr error
	var err error
	mu.Lock()
	unregister, err = engine.OnTimeline(func(e Event) {
		calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if e.Job != job || (e.Kind != JobCancelled && e.Kind != JobDone) {
			return
		}
		_, stateErr = engine.State(e.Job)
		closeErr = engine.Close()
		unregister()
		close(done)
	})
	if err != nil {
		mu.Unlock()
		t.Fatal(err)
	}
	job, err = engine.Submit(context.Background(), Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Cancel(job); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the callback never saw its job end (hang?)")
	}
	if !errors.Is(closeErr, ErrInCallback) || stateErr != nil {
		t.Fatalf("from the callback: Close = %v (want ErrInCallback), State = %v", closeErr, stateErr)
	}
	n := calls.Load()
	// Another job: the unregistered callback hears nothing of it.
	id, err := engine.Submit(context.Background(), Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	if err != nil {
		t.Fatal(err)
	}
	_ = engine.Cancel(id)
	if _, err := engine.Await(context.Background(), id); !errors.Is(err, ErrCancelled) {
		t.Fatalf("await: %v", err)
	}
	stop, _ := engine.OnTimeline(func(Event) {})
	stop() // flushes what was recorded before
	if calls.Load() != n {
		t.Fatalf("callback called %d more times after it unregistered", calls.Load()-n)
	}
}

// Close racing the unregister funcs of callbacks that are busy: after an unregister returns
// its callback never runs (the Go state behind it is gone), and nothing panics. The engine
// is started again for the tests after this one.
func TestCloseRacingUnregister(t *testing.T) {
	const n = 8
	var gone [n]atomic.Bool
	var late atomic.Int64
	started := make(chan struct{}, 1)
	stops := make([]func(), n)
	for i := 0; i < n; i++ {
		i := i
		stop, err := engine.OnTimeline(func(e Event) {
			if gone[i].Load() {
				late.Add(1)
			}
			if e.Kind == SynthStart {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		stops[i] = stop
	}
	for j := 0; j < 3; j++ {
		if _, err := engine.Submit(context.Background(), Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("synthesis never started")
	}
	var wg sync.WaitGroup
	wg.Add(n + 2)
	closeErrs := make([]error, 2)
	for c := 0; c < 2; c++ {
		c := c
		go func() { defer wg.Done(); closeErrs[c] = engine.Close() }()
	}
	for i := 0; i < n; i++ {
		i := i
		go func() {
			defer wg.Done()
			stops[i]()
			gone[i].Store(true)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("Close racing unregister hung")
	}
	for _, err := range closeErrs {
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	if late.Load() != 0 {
		t.Fatalf("%d callbacks ran after their unregister returned", late.Load())
	}
	var err error
	engine, err = Start(Config{ParamsDir: paramsDir()})
	if err != nil {
		t.Fatal(err)
	}
}

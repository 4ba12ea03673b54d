package raw

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The tests share the process-wide engine; the one that starts it shuts it down. The 2KiB
// fixture is the one `make fixtures` creates (CUZK_TEST_C1, default
// $FIL_PROOFS_PARAMETER_CACHE/cuzk-fixtures/2KiB.c1.json), sealed for sector 1 of miner 1000.

func paramsDir() string {
	if d := os.Getenv("FIL_PROOFS_PARAMETER_CACHE"); d != "" {
		return d
	}
	return "/var/tmp/filecoin-proof-parameters"
}

func fixture(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv("CUZK_TEST_C1")
	if path == "" {
		path = filepath.Join(paramsDir(), "cuzk-fixtures", "2KiB.c1.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		// A missing fixture is a failure, not a skip: run `make fixtures` first.
		t.Fatalf("cannot read the 2KiB fixture (run `make fixtures`): %v", err)
	}
	return b
}

// status is err's library status (StatusOK for nil); it fails the test for an error of another
// type or an empty message.
func status(t *testing.T, err error) Status {
	t.Helper()
	if err == nil {
		return StatusOK
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not an *Error", err, err)
	}
	if e.Message == "" {
		t.Errorf("%v: no message", e)
	}
	return e.Status
}

func TestNamesAndVersion(t *testing.T) {
	if v := Version(); v == "" || strings.ContainsAny(v, " \n") {
		t.Errorf("version %q", v)
	}
	for s, want := range map[Status]string{StatusOK: "OK", StatusInvalidInput: "INVALID_INPUT",
		StatusInCallback: "IN_CALLBACK", 999: "UNKNOWN"} {
		if got := s.String(); got != want {
			t.Errorf("status %d: %q, want %q", s, got, want)
		}
	}
	for k, want := range map[EventKind]string{EventKindJobQueued: "JOB_QUEUED", EventKindGPUEnd: "GPU_END",
		EventKindJobCancelled: "JOB_CANCELLED", 99: "UNKNOWN"} {
		if got := EventKindName(int32(k)); got != want {
			t.Errorf("event kind %d: %q, want %q", k, got, want)
		}
	}
	e := &Error{Status: StatusParams, Message: "m"}
	if e.Error() != "cuzk: PARAMS: m" {
		t.Errorf("error text %q", e.Error())
	}
}

// Without an engine every call fails with the library's status and message, and the copies the
// calls make (the C1 output, the vanilla proofs and their array) are freed on that path too
// (cgocheck2 and the race detector watch the passes).
func TestCallsWithoutAnEngine(t *testing.T) {
	if _, err := EngineMetrics(MetricsJSON); status(t, err) != StatusNotRunning {
		t.Errorf("metrics: %v", err)
	}
	if _, err := EngineStatus(); status(t, err) != StatusNotRunning {
		t.Errorf("status: %v", err)
	}
	if _, err := EngineAdmission(5, 0, 0, 0); status(t, err) != StatusNotRunning {
		t.Errorf("admission: %v", err)
	}
	if _, err := Submit(JobRequestDefault(), []byte("{}")); status(t, err) == StatusOK {
		t.Error("submit without an engine succeeded")
	}
	req := PostRequestDefault()
	req.RegisteredProof = 10 // WindowPoSt 2KiB V1_1
	if _, err := PostSubmit(req, [][]byte{{1, 2, 3}, {}}); status(t, err) == StatusOK {
		t.Error("PoSt submit without an engine succeeded")
	}
	if st := status(t, Cancel(1<<62)); st != StatusNotRunning && st != StatusNotFound {
		t.Errorf("cancel: %v", st)
	}
	if _, err := Poll(1 << 62); status(t, err) == StatusOK {
		t.Error("poll of an unknown job succeeded")
	}
	if _, err := Await(1<<62, 0); status(t, err) == StatusOK {
		t.Error("await of an unknown job succeeded")
	}
	if _, err := TimelineRegister(func(TimelineEvent, string) {}); status(t, err) != StatusNotRunning {
		t.Errorf("timeline register: %v", err)
	}
	if _, err := TimelineRegister(nil); status(t, err) != StatusInvalidArgument {
		t.Errorf("timeline register of nil: %v", err)
	}
	timeline.mu.RLock()
	left := len(timeline.fns)
	timeline.mu.RUnlock()
	if left != 0 {
		t.Errorf("%d timeline funcs left after failed registrations", left)
	}
	if err := TimelineUnregister(1 << 62); err != nil {
		t.Errorf("unregister of an unknown handle: %v", err)
	}
	if ok, err := VerifySeal([]byte("not a C1 output"), 1, [32]byte{}, make([]byte, ProofBytes)); ok || status(t, err) == StatusOK {
		t.Errorf("verify of garbage: %v %v", ok, err)
	}
	if err := EngineShutdown(); err != nil {
		t.Errorf("shutdown without an engine: %v", err)
	}
}

// On a running engine the fixed-layout report and admission agree with the JSON metrics, the
// log func receives the engine's start record, and a job's timeline events arrive with its id,
// the job-level partition and their detail text.
func TestEngineThroughTheMirrors(t *testing.T) {
	c1 := fixture(t)
	if v, ok := os.LookupEnv("RUST_LOG"); ok {
		os.Unsetenv("RUST_LOG")
		defer os.Setenv("RUST_LOG", v)
	}
	var mu sync.Mutex
	var started []LogRecord
	if err := LogSetCallback(func(rec LogRecord, target, message string) {
		if target == "cuzk::engine" && strings.HasPrefix(message, "cuzk engine started") {
			mu.Lock()
			started = append(started, rec)
			mu.Unlock()
		}
	}, LogInfo); err != nil {
		t.Fatal(err)
	}

	cfg := ConfigDefault()
	if cfg.StructSize != uint32(unsafe.Sizeof(Config{})) || cfg.SelfCheck != 1 {
		t.Errorf("default configuration: %+v", cfg)
	}
	cfg.SynthesisWorkers = 2
	if err := EngineStart(cfg, paramsDir(), ""); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := EngineShutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	if err := LogSetCallback(nil, 0); err != nil { // delivers what was logged before it
		t.Fatal(err)
	}
	mu.Lock()
	if len(started) != 1 || started[0].Level != LogInfo || time.Since(time.UnixMicro(int64(started[0].UnixUs))) > time.Hour {
		t.Errorf("engine start records: %+v", started)
	}
	mu.Unlock()
	logs.mu.RLock()
	left, current := len(logs.fns), logs.current
	logs.mu.RUnlock()
	if left != 0 || current != 0 {
		t.Errorf("after LogSetCallback(nil): %d log funcs kept, key %d in place", left, current)
	}

	r, err := EngineStatus()
	if err != nil {
		t.Fatal(err)
	}
	b, err := EngineMetrics(MetricsJSON)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		MemoryBudget uint64            `json:"memory_budget"`
		Devices      []json.RawMessage `json:"devices"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if r.StructSize != uint32(unsafe.Sizeof(r)) || r.MemoryBudgetBytes != js.MemoryBudget ||
		int(r.Devices) != len(js.Devices) || r.JobsInFlight != 0 {
		t.Errorf("report %+v, JSON budget %d and %d devices", r, js.MemoryBudget, len(js.Devices))
	}
	a, err := EngineAdmission(5, 0, 0, 0) // StackedDrg2KiBV1_1
	if err != nil {
		t.Fatal(err)
	}
	if a.StructSize != uint32(unsafe.Sizeof(a)) || a.Admit != 1 || a.Reason != AdmitOK || a.PartitionsPerJob != 1 ||
		a.PartitionBytes == 0 || a.FreeBytes > r.MemoryBudgetBytes || a.JobSlots == 0 {
		t.Errorf("admission %+v", a)
	}

	type event struct {
		TimelineEvent
		detail string
	}
	events := make(chan event, 1024)
	h, err := TimelineRegister(func(ev TimelineEvent, detail string) {
		events <- event{ev, detail}
	})
	if err != nil {
		t.Fatal(err)
	}
	req := JobRequestDefault()
	req.SectorID = 1
	req.ProverID[0] = 0xe8 // the LEB128 of miner 1000
	req.ProverID[1] = 0x07
	id, err := Submit(req, c1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Cancel(id); err != nil {
		t.Fatal(err)
	}
	if _, err := Await(id, -1); status(t, err) != StatusCancelled {
		t.Errorf("await of a cancelled job: %v", err)
	}
	if err := TimelineUnregister(h); err != nil { // delivers what was recorded before it
		t.Fatal(err)
	}
	close(events)
	var kinds []EventKind
	for ev := range events {
		if ev.JobID != id {
			continue
		}
		kinds = append(kinds, ev.Kind)
		if ev.StructSize != uint32(unsafe.Sizeof(ev.TimelineEvent)) || ev.detail == "" && ev.Kind == EventKindJobQueued {
			t.Errorf("event %+v %q", ev.TimelineEvent, ev.detail)
		}
		if (ev.Kind == EventKindJobQueued || ev.Kind == EventKindJobCancelled) && ev.Partition != NoPartition {
			t.Errorf("job-level event %+v", ev.TimelineEvent)
		}
	}
	if len(kinds) < 2 || kinds[0] != EventKindJobQueued || kinds[len(kinds)-1] != EventKindJobCancelled {
		t.Errorf("the job's events: %v", kinds)
	}
	timeline.mu.RLock()
	left = len(timeline.fns) + len(timeline.keys)
	timeline.mu.RUnlock()
	if left != 0 {
		t.Errorf("%d timeline entries kept after unregister", left)
	}
}

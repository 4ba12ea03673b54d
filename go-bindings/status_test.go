package cuzk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/filecoin-project/go-state-types/abi"
)

// restart replaces the process-wide engine with one started from cfg.
func restart(t *testing.T, cfg Config) {
	t.Helper()
	if err := engine.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	var err error
	if engine, err = Start(cfg); err != nil {
		t.Fatalf("start: %v", err)
	}
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func admission(t *testing.T) Admission {
	t.Helper()
	a, err := engine.Admission(abi.RegisteredSealProof_StackedDrg2KiBV1_1, AdmissionOptions{})
	if err != nil {
		t.Fatalf("admission: %v", err)
	}
	return a
}

// The admission call against a real engine under load: with room for the parameters and one
// and a half partitions, it says yes on an idle engine, no while a job holds its partition's
// memory (and a second job waits for memory behind it), and yes again once they have ended.
func TestAdmissionUnderLoad(t *testing.T) {
	// Exact budget arithmetic: no recorded circuit held beside the partitions.
	defer restart(t, Config{ParamsDir: paramsDir()})
	old, had := os.LookupEnv("CUZK_SYNTHESIS")
	os.Setenv("CUZK_SYNTHESIS", "full")
	defer func() {
		if had {
			os.Setenv("CUZK_SYNTHESIS", old)
		} else {
			os.Unsetenv("CUZK_SYNTHESIS")
		}
	}()

	restart(t, Config{ParamsDir: paramsDir(), SynthesisWorkers: 2})
	a := admission(t)
	params, part := a.ParamsBytes, a.PartitionBytes
	if !a.Admit || a.Reason != AdmitOK || params == 0 || part == 0 || a.PartitionsPerJob != 1 {
		t.Fatalf("idle engine: %+v", a)
	}
	ctx := context.Background()
	req := Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)}
	// What stays reserved once the parameters are loaded: their host copy where the CPU proves
	// (or the GPU prover streams them), nothing where the GPU holds them in its memory.
	first, err := engine.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Await(ctx, first); err != nil {
		t.Fatal(err)
	}
	s, err := engine.Status()
	if err != nil {
		t.Fatal(err)
	}
	resident := s.MemoryReserved
	if resident != 0 && resident != params {
		t.Fatalf("an idle engine holds %d bytes; the parameter file has %d", resident, params)
	}
	// Room for the parameters and one partition and a half.
	budget := resident + part + part/2
	if budget < params {
		t.Skipf("the parameters (%d bytes) are read for the GPU through a budget of %d", params, budget)
	}
	restart(t, Config{ParamsDir: paramsDir(), SynthesisWorkers: 2, MemoryBudget: budget, MaxJobs: 4})
	a = admission(t)
	if !a.Admit || a.PartitionsFit != 1 || a.JobsFit != 1 || a.FreeBytes != budget || a.ParamsBytes != params {
		t.Fatalf("idle engine, small budget: %+v", a)
	}
	if ok, err := engine.CanAccept(abi.RegisteredSealProof_StackedDrg2KiBV1_1); !ok || err != nil {
		t.Fatalf("CanAccept on an idle engine: %v %v", ok, err)
	}

	w, err := engine.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Minute, "the first job's partition to hold its memory", func() bool {
		s, err := engine.Status()
		return err == nil && s.MemoryReserved == resident+part
	})
	a = admission(t)
	if a.Admit || a.Reason != AdmitMemory || a.PartitionsFit != 0 || a.ParamsBytes != 0 {
		t.Fatalf("budget full: %+v", a)
	}
	if ok, _ := engine.CanAccept(abi.RegisteredSealProof_StackedDrg2KiBV1_1); ok {
		t.Fatal("CanAccept says yes with the budget full")
	}
	x, err := engine.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the second job to wait for memory", func() bool {
		if st, _ := engine.State(w); st != JobRunning {
			t.Fatal("the first job ended before the second was seen waiting for memory")
		}
		return admission(t).QueuedBytes == part
	})
	if a = admission(t); a.Admit || a.JobSlots != 2 {
		t.Fatalf("a job waiting for memory: %+v", a)
	}
	// The second job is cancelled while it waits (its wait ends at once); the first finishes.
	if err := engine.Cancel(x); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Await(ctx, x); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled job: %v", err)
	}
	proof, err := engine.Await(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	verify(t, proof)
	a = admission(t)
	if !a.Admit || a.PartitionsFit != 1 || a.QueuedBytes != 0 || a.FreeBytes != budget-resident {
		t.Fatalf("after the jobs: %+v", a)
	}
	s, err = engine.Status()
	if err != nil || s.MemoryPeak > budget {
		t.Fatalf("peak %d over the budget %d (%v)", s.MemoryPeak, budget, err)
	}

	// NI-PoRep: 13 partitions of the 2KiB circuit (the same parameters); fixture shapes are for
	// interactive types only.
	ni := abi.RegisteredSealProof_StackedDrg2KiBV1_2_Feat_NiPoRep
	if a, err := engine.Admission(ni, AdmissionOptions{}); err != nil || a.PartitionsPerJob != 13 {
		t.Errorf("NI-PoRep: %+v, %v", a, err)
	}
	if _, err := engine.Admission(ni, AdmissionOptions{FixturePartitions: 2}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NI-PoRep fixture shape: %v", err)
	}
	if _, err := engine.Admission(abi.RegisteredSealProof(99), AdmissionOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := engine.Admission(abi.RegisteredSealProof_StackedDrg8MiBV1_1, AdmissionOptions{}); !errors.Is(err, ErrParams) {
		t.Errorf("type without parameters: %v", err)
	}
}

func TestStatusMetricsAndHandler(t *testing.T) {
	s, err := engine.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Running || len(s.Devices) == 0 || s.MemoryBudget == 0 || s.MemoryReserved > s.MemoryBudget {
		t.Fatalf("status: %+v", s)
	}
	names := []string{}
	for _, d := range s.Devices {
		names = append(names, d.Name)
		if !d.Enabled || d.OutOfService != "" {
			t.Errorf("device %+v", d)
		}
	}
	if names[len(names)-1] != "cpu" && !strings.HasPrefix(names[0], "cuda:") {
		t.Errorf("devices %v", names)
	}
	m, err := engine.Metrics()
	if err != nil || !strings.Contains(string(m), "\ncuzk_up 1\n") {
		t.Fatalf("metrics: %v\n%s", err, m)
	}
	srv := httptest.NewServer(engine.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") ||
		!strings.Contains(string(body), "# TYPE cuzk_jobs_completed_total counter") {
		t.Fatalf("GET: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, err = http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

type captured struct {
	mu      sync.Mutex
	records []slog.Record
}

type captureHandler struct{ c *captured }

func (h captureHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.c.mu.Lock()
	h.c.records = append(h.c.records, r)
	h.c.mu.Unlock()
	return nil
}
func (h captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h captureHandler) WithGroup(string) slog.Handler      { return h }

// The library's log records reach the host's slog logger (here the engine's start line, at
// INFO, with its Rust module as "target"), and stop once it is removed.
func TestSetLoggerReceivesTheLibrarysRecords(t *testing.T) {
	if v, ok := os.LookupEnv("RUST_LOG"); ok {
		os.Unsetenv("RUST_LOG")
		defer os.Setenv("RUST_LOG", v)
	}
	c := &captured{}
	if err := SetLogger(slog.New(captureHandler{c})); err != nil {
		t.Fatal(err)
	}
	restart(t, Config{ParamsDir: paramsDir()})
	if err := SetLogger(nil); err != nil { // delivers what was logged before it
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	found := false
	for _, r := range c.records {
		target := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "target" {
				target = a.Value.String()
			}
			return true
		})
		if strings.HasPrefix(r.Message, "cuzk engine started") {
			found = true
			if r.Level != slog.LevelInfo || target != "cuzk::engine" || time.Since(r.Time) > time.Hour {
				t.Errorf("record %v %q target %q", r.Level, r.Message, target)
			}
		}
	}
	if !found {
		t.Fatalf("no engine start record among %d", len(c.records))
	}
	n := len(c.records)
	c.mu.Unlock()
	restart(t, Config{ParamsDir: paramsDir()})
	c.mu.Lock()
	if len(c.records) != n {
		t.Errorf("records after SetLogger(nil): %d, want %d", len(c.records), n)
	}
}

// jsonKeys lists the json names of a struct type's fields.
func jsonKeys(t reflect.Type) []string {
	keys := []string{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// EngineStatus, Device and ClassStatus mirror the library's JSON status: a field the library
// adds, renames or drops fails here, rather than reading as a silent zero in production
// dashboards.
func TestEngineStatusMirrorsTheLibrarysJSON(t *testing.T) {
	raw, err := engine.metrics(1)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s EngineStatus
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("a key of the library's status JSON has no field in EngineStatus: %v", err)
	}
	var top struct {
		Devices []map[string]json.RawMessage `json:"devices"`
		Classes []map[string]json.RawMessage `json:"classes"`
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Devices) == 0 || len(top.Classes) == 0 {
		t.Fatalf("status JSON without devices or classes: %s", raw)
	}
	check := func(what string, got map[string]json.RawMessage, typ reflect.Type) {
		for _, k := range jsonKeys(typ) {
			if _, ok := got[k]; !ok {
				t.Errorf("%s.%s is not in the library's status JSON", what, k)
			}
		}
	}
	check("EngineStatus", all, reflect.TypeOf(EngineStatus{}))
	check("Device", top.Devices[0], reflect.TypeOf(Device{}))
	check("ClassStatus", top.Classes[0], reflect.TypeOf(ClassStatus{}))
}

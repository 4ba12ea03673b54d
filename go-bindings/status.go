package cuzk

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/filecoin-project/go-state-types/abi"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
)

// Device is one prover device in a [Status] (the CPU prover counts as one).
type Device struct {
	// Name is "cpu", "cuda:0", ...
	Name string `json:"name"`
	// Current is the (job, partition) being proved, if any.
	Current *[2]uint64 `json:"current"`
	// PartitionsProved counts the partitions this device has proved.
	PartitionsProved uint64 `json:"partitions_proved"`
	// Enabled is false while the device is out of service.
	Enabled bool `json:"enabled"`
	// OutOfService is why it is out ("operator", "faults", "hung"), while it is.
	OutOfService string `json:"out_of_service"`
	// ConsecutiveFailures counts prover calls failed in a row; FailedCalls all of them.
	ConsecutiveFailures uint32 `json:"consecutive_failures"`
	FailedCalls         uint64 `json:"failed_calls"`
	// Readmissions counts the times it was put back after a passed probe.
	Readmissions uint64 `json:"readmissions"`
	// NoRoom counts the partitions it had no device memory for at that moment (another
	// process held it; not a fault): they wait for its room (RoomWaits), then go elsewhere.
	// PassedOver counts those it can never take (a card too small for the circuit), proved
	// elsewhere. WaitingForRoomMs is how long it has been waiting for room, while it is.
	NoRoom           uint64  `json:"no_room"`
	PassedOver       uint64  `json:"passed_over"`
	RoomWaits        uint64  `json:"room_waits"`
	WaitingForRoomMs *uint64 `json:"waiting_for_room_ms"`
	// HungCalls counts the calls the watchdog gave up on (far past their expected time);
	// their partitions were synthesized again for the other devices.
	HungCalls uint64 `json:"hung_calls"`
	// ProbeInMs is the milliseconds until the next probe, while out for faults.
	ProbeInMs *uint64 `json:"probe_in_ms"`
}

// EngineStatus is one snapshot of the engine, taken at once: what the library's
// cuzk_engine_status reports, with every device and resident parameter set.
type EngineStatus struct {
	Running bool `json:"running"`
	// JobsInFlight: queued or running. JobsRetained: finished, result not collected yet.
	JobsInFlight int `json:"jobs_in_flight"`
	JobsRetained int `json:"jobs_retained"`
	// Partitions by stage: waiting for synthesis, being synthesized, waiting for a prover,
	// being proved, and waiting for (or being proved by) the CPU after a GPU failed on them.
	SynthesisQueue int    `json:"synthesis_queue"`
	Synthesizing   uint64 `json:"synthesizing"`
	ProverQueue    int    `json:"prover_queue"`
	Proving        uint64 `json:"proving"`
	CPURetryQueue  int    `json:"cpu_retry_queue"`
	// Memory budget, bytes reserved now, highest reservation seen.
	MemoryBudget   uint64 `json:"memory_budget"`
	MemoryReserved uint64 `json:"memory_reserved"`
	MemoryPeak     uint64 `json:"memory_peak"`
	// MemoryStuck is the part of MemoryReserved held by GPU calls the watchdog gave up on
	// (until they return), counted as never coming back when work is refused as unfit.
	MemoryStuck uint64 `json:"memory_stuck"`
	// Counters since the engine started.
	Completed  uint64 `json:"completed"`
	Failed     uint64 `json:"failed"`
	Cancelled  uint64 `json:"cancelled"`
	CPURetries uint64 `json:"cpu_retries"`
	// BadProofs: partitions whose proof failed the self-check, synthesized in full and proved
	// again on the CPU (a fault of the GPU that made it).
	BadProofs uint64 `json:"bad_proofs"`
	// Events and log records dropped because callbacks fell behind.
	TimelineEventsDropped uint64 `json:"timeline_events_dropped"`
	LogRecordsDropped     uint64 `json:"log_records_dropped"`
	ParamsChecks          uint64 `json:"params_checks"`
	// ResidentParams lists the parameter ids held in host memory.
	ResidentParams []string `json:"resident_params"`
	// Recorded circuits (pre-compiled synthesis): in memory, their bytes, being made, and
	// counters (loaded, recorded, files rejected, recordings distrusted, partitions synthesized
	// in full after a wrong recording).
	PCEResident      int    `json:"pce_resident"`
	PCEResidentBytes uint64 `json:"pce_resident_bytes"`
	PCEWorking       int    `json:"pce_working"`
	PCELoaded        uint64 `json:"pce_loaded"`
	PCERecorded      uint64 `json:"pce_recorded"`
	PCERejectedFiles uint64 `json:"pce_rejected_files"`
	PCEDistrusted    uint64 `json:"pce_distrusted"`
	PCEFallbacks     uint64 `json:"pce_fallbacks"`
	// PCECircuitFaults counts circuits whose recording made in this process gave a wrong
	// assignment a second time: a fault to look into (full synthesis for them until restart).
	PCECircuitFaults uint64 `json:"pce_circuit_faults"`
	// Native witness generation: witnesses it made, partitions that fell back to witness
	// synthesis, circuits it was distrusted for.
	NativeWitnesses  uint64 `json:"native_witnesses"`
	NativeFallbacks  uint64 `json:"native_fallbacks"`
	NativeDistrusted uint64 `json:"native_distrusted"`
	// RecordingWaits counts partitions that waited for their circuit's recording (being
	// loaded or made) rather than synthesize in full.
	RecordingWaits uint64 `json:"recording_waits"`
	// CPUFallbackUnfit lists the parameter ids in use whose partitions, sent to the CPU (a
	// fallback from the GPUs), could not reserve their host memory beside what is held now:
	// such a partition would fail its job (see Admission.CPUFallbackFits).
	CPUFallbackUnfit []string `json:"cpu_fallback_unfit"`
	// Classes: per class ("winning_post", "window_post", "throughput"), highest first.
	Classes []ClassStatus `json:"classes"`
	Devices []Device      `json:"devices"`
}

// ClassStatus is one class's queues and latency: partitions queued, jobs completed, and the
// submission-to-result milliseconds of its latest job and, over its latest (up to 256), the
// median and 99th percentile (nil before any).
type ClassStatus struct {
	Class    string  `json:"class"`
	Queued   uint64  `json:"queued"`
	JobsDone uint64  `json:"jobs_done"`
	LastMs   *uint64 `json:"last_ms"`
	P50Ms    *uint64 `json:"p50_ms"`
	P99Ms    *uint64 `json:"p99_ms"`
}

func (e *Engine) metrics(format uint32) ([]byte, error) {
	b, err := raw.EngineMetrics(format)
	if err != nil {
		return nil, fromRaw(err)
	}
	return b, nil
}

// Status returns a snapshot of the running engine (ErrNotRunning after Close).
func (e *Engine) Status() (*EngineStatus, error) {
	b, err := e.metrics(raw.MetricsJSON)
	if err != nil {
		return nil, err
	}
	var s EngineStatus
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, &Error{Status: StatusInternal, Message: fmt.Sprintf("status JSON: %v", err)}
	}
	return &s, nil
}

// Metrics returns the engine's state as Prometheus text exposition (format 0.0.4).
func (e *Engine) Metrics() ([]byte, error) {
	return e.metrics(raw.MetricsText)
}

// MetricsHandler serves [Engine.Metrics] for a Prometheus scrape (mount it at /metrics, or
// beside the host's own collectors). Without a running engine it answers 503.
func (e *Engine) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, err := e.Metrics()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b)
	})
}

// AdmitReason says why a job would not start now.
type AdmitReason uint32

const (
	// AdmitOK: it would start.
	AdmitOK AdmitReason = raw.AdmitOK
	// AdmitMemory: not enough of the memory budget is free for one of its partitions.
	AdmitMemory AdmitReason = raw.AdmitMemory
	// AdmitMaxJobs: Config.MaxJobs jobs are queued or running.
	AdmitMaxJobs AdmitReason = raw.AdmitMaxJobs
)

func (r AdmitReason) String() string {
	switch r {
	case AdmitOK:
		return "ok"
	case AdmitMemory:
		return "memory"
	case AdmitMaxJobs:
		return "max_jobs"
	}
	return fmt.Sprintf("reason(%d)", uint32(r))
}

// Admission is the engine's answer to "could one more job of this type start now?".
type Admission struct {
	// Admit: one more job would start now; otherwise Reason says why it would wait.
	Admit  bool
	Reason AdmitReason
	// PartitionsPerJob of the type; PartitionsFit: partitions of the type that could reserve
	// their memory now, after the work ahead; JobsFit: jobs whose every partition could (at
	// most JobSlots).
	PartitionsPerJob uint32
	PartitionsFit    uint64
	JobsFit          uint64
	// Bytes: one partition's reservation, parameters still to load for the type (0:
	// resident), what the work queued ahead will reserve, and the budget not reserved now.
	PartitionBytes uint64
	ParamsBytes    uint64
	QueuedBytes    uint64
	FreeBytes      uint64
	// JobSlots: jobs that may still be submitted before Config.MaxJobs.
	JobSlots uint64
	// CPUFallbackBytes: host bytes a partition of the type sent to the CPU (a fallback from
	// the GPUs) would reserve beyond what is reserved now (its full assignment, and the full
	// parameters where the CPU's copy is not loaded: a second copy beside a streamed card's
	// pinned one); 0 where no GPU proves. CPUFallbackFits: whether they could ever be
	// reserved beside what is not given back meanwhile; false: such a partition would fail
	// its job with ErrResourceExhausted.
	CPUFallbackBytes uint64
	CPUFallbackFits  bool
}

// AdmissionOptions refine [Engine.Admission].
type AdmissionOptions struct {
	// Priority of the job to be admitted (work of the same or higher priority goes first).
	Priority int32
	// FixturePartitions / FixtureLayers select a test fixture shape (test sector sizes only).
	FixturePartitions uint32
	FixtureLayers     uint32
}

// Admission asks the engine whether one more job of proofType would start now within its
// memory budget, and how many could, from its own accounting at this moment (memory reserved,
// partitions queued ahead, parameters still to load). It can change as soon as it is given: a
// job submitted after a yes may still wait for memory, never fail for it. Errors: an unknown or
// unsupported proof type (ErrInvalidArgument, ErrUnsupported), its parameters missing or
// damaged (ErrParams: a job would fail), no engine (ErrNotRunning).
func (e *Engine) Admission(proofType abi.RegisteredSealProof, opt AdmissionOptions) (Admission, error) {
	a, err := raw.EngineAdmission(int64(proofType), opt.Priority, opt.FixturePartitions, opt.FixtureLayers)
	if err != nil {
		return Admission{}, fromRaw(err)
	}
	return Admission{
		Admit:            a.Admit != 0,
		Reason:           AdmitReason(a.Reason),
		PartitionsPerJob: a.PartitionsPerJob,
		PartitionsFit:    a.PartitionsFit,
		JobsFit:          a.JobsFit,
		PartitionBytes:   a.PartitionBytes,
		ParamsBytes:      a.ParamsBytes,
		QueuedBytes:      a.QueuedBytes,
		FreeBytes:        a.FreeBytes,
		JobSlots:         a.JobSlots,
		CPUFallbackBytes: a.CPUFallbackBytes,
		CPUFallbackFits:  a.CPUFallbackFits != 0,
	}, nil
}

// CanAccept is the admission call a scheduler's CanAccept needs: whether one more job of
// proofType would start now, at priority 0, within the memory budget.
func (e *Engine) CanAccept(proofType abi.RegisteredSealProof) (bool, error) {
	a, err := e.Admission(proofType, AdmissionOptions{})
	return a.Admit, err
}

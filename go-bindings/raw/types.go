package raw

import "unsafe"

// The constants and structs here mirror include/cuzk.h without cgo, so that go doc shows their
// values. layout_test.go checks every one against the header: the values of the enums and
// defines, and each struct's size and its fields' offsets and sizes. A struct's `c` tags name
// the C fields.

// Status is a cuzk_status value.
type Status int32

// The cuzk_status values (CUZK_STATUS_*).
const (
	StatusOK                Status = 0
	StatusInvalidArgument   Status = 1
	StatusInvalidInput      Status = 2
	StatusUnsupported       Status = 3
	StatusParams            Status = 4
	StatusProving           Status = 5
	StatusVerifyFailed      Status = 6
	StatusCancelled         Status = 7
	StatusTimeout           Status = 8
	StatusNotFound          Status = 9
	StatusNotRunning        Status = 10
	StatusResourceExhausted Status = 11
	StatusPanic             Status = 12
	StatusInternal          Status = 13
	StatusAlreadyRunning    Status = 14
	StatusInCallback        Status = 15
)

// JobState is a cuzk_job_state value, from [Poll].
type JobState int32

// The cuzk_job_state values (CUZK_JOB_STATE_*).
const (
	JobStateRunning   JobState = 0
	JobStateSucceeded JobState = 1
	JobStateFailed    JobState = 2
)

// EventKind is a cuzk_event_kind value, the Kind of a [TimelineEvent].
type EventKind uint32

// The cuzk_event_kind values (CUZK_EVENT_KIND_*).
const (
	EventKindJobQueued    EventKind = 0
	EventKindSynthStart   EventKind = 1
	EventKindSynthEnd     EventKind = 2
	EventKindChanSend     EventKind = 3
	EventKindGPUPickup    EventKind = 4
	EventKindGPUStart     EventKind = 5
	EventKindGPUEnd       EventKind = 6
	EventKindJobDone      EventKind = 7
	EventKindJobFailed    EventKind = 8
	EventKindJobCancelled EventKind = 9
)

// The header's defines.
const (
	// ProofBytes is one partition's Groth16 proof in bytes (CUZK_PROOF_BYTES).
	ProofBytes = 192
	// NoPartition is the Partition of job-level timeline events (CUZK_NO_PARTITION).
	NoPartition = 4294967295
	// AdmitOK, AdmitMemory and AdmitMaxJobs are the values of Admission.Reason
	// (CUZK_ADMIT_*): it would start; not enough of the memory budget is free; max_jobs
	// jobs are queued or running.
	AdmitOK      = 0
	AdmitMemory  = 1
	AdmitMaxJobs = 2
)

// Values the header documents in prose only (it has no constants for them); the tests cannot
// check these against it.
const (
	// MetricsText and MetricsJSON are the formats of [EngineMetrics]: Prometheus text
	// exposition, or JSON with every device and resident parameter set.
	MetricsText uint32 = 0
	MetricsJSON uint32 = 1
	// LogError ... LogTrace are the levels of a [LogRecord] and the maxLevel of
	// [LogSetCallback] (0 there: WARN).
	LogError uint32 = 1
	LogWarn  uint32 = 2
	LogInfo  uint32 = 3
	LogDebug uint32 = 4
	LogTrace uint32 = 5
)

// Config mirrors struct cuzk_config. Start from [ConfigDefault]; [EngineStart] sets the two
// path fields from its arguments.
type Config struct {
	StructSize         uint32         `c:"struct_size"`
	SynthesisWorkers   uint32         `c:"synthesis_workers"`
	SynthesisLookahead uint32         `c:"synthesis_lookahead"`
	MemoryBudgetBytes  uint64         `c:"memory_budget_bytes"`
	paramsDir          unsafe.Pointer `c:"params_dir"`
	SelfCheck          uint8          `c:"self_check"`
	TimelineStderr     uint8          `c:"timeline_stderr"`
	timelineFile       unsafe.Pointer `c:"timeline_file"`
	JobRetentionMs     uint64         `c:"job_retention_ms"`
	MaxC1Bytes         uint64         `c:"max_c1_bytes"`
	DeviceCooldownMs   uint64         `c:"device_cooldown_ms"`
	MaxJobs            uint32         `c:"max_jobs"`
	reserved           uint32         `c:"_reserved"`
}

// JobRequest mirrors struct cuzk_job_request. Start from [JobRequestDefault]; [Submit] sets
// the C1 output's pointer and length from its argument.
type JobRequest struct {
	StructSize        uint32         `c:"struct_size"`
	Priority          int32          `c:"priority"`
	c1Ptr             unsafe.Pointer `c:"c1_ptr"`
	c1Len             uintptr        `c:"c1_len"`
	SectorID          uint64         `c:"sector_id"`
	ProverID          [32]byte       `c:"prover_id"`
	FixturePartitions uint32         `c:"fixture_partitions"`
	FixtureLayers     uint32         `c:"fixture_layers"`
}

// PostRequest mirrors struct cuzk_post_request. Start from [PostRequestDefault]; [PostSubmit]
// and [GeneratePost] set the vanilla proofs' array and count from their argument.
type PostRequest struct {
	StructSize      uint32         `c:"struct_size"`
	Priority        int32          `c:"priority"`
	RegisteredProof int64          `c:"registered_proof"`
	ProverID        [32]byte       `c:"prover_id"`
	Randomness      [32]byte       `c:"randomness"`
	vanillaProofs   unsafe.Pointer `c:"vanilla_proofs"`
	vanillaCount    uintptr        `c:"vanilla_count"`
	PartitionIndex  int64          `c:"partition_index"`
}

// UpdateRequest mirrors struct cuzk_update_request. Start from [UpdateRequestDefault];
// [UpdateSubmit] and [GenerateUpdate] set the vanilla proofs' array and count from their
// argument.
type UpdateRequest struct {
	StructSize      uint32         `c:"struct_size"`
	Priority        int32          `c:"priority"`
	RegisteredProof int64          `c:"registered_proof"`
	CommROld        [32]byte       `c:"comm_r_old"`
	CommRNew        [32]byte       `c:"comm_r_new"`
	CommDNew        [32]byte       `c:"comm_d_new"`
	vanillaProofs   unsafe.Pointer `c:"vanilla_proofs"`
	vanillaCount    uintptr        `c:"vanilla_count"`
}

// EngineReport mirrors struct cuzk_engine_report, from [EngineStatus].
type EngineReport struct {
	StructSize             uint32 `c:"struct_size"`
	Devices                uint32 `c:"devices"`
	DevicesBusy            uint32 `c:"devices_busy"`
	DevicesOutOfService    uint32 `c:"devices_out_of_service"`
	JobsInFlight           uint64 `c:"jobs_in_flight"`
	PartitionsQueued       uint64 `c:"partitions_queued"`
	PartitionsSynthesizing uint64 `c:"partitions_synthesizing"`
	PartitionsReady        uint64 `c:"partitions_ready"`
	PartitionsProving      uint64 `c:"partitions_proving"`
	MemoryBudgetBytes      uint64 `c:"memory_budget_bytes"`
	MemoryReservedBytes    uint64 `c:"memory_reserved_bytes"`
	MemoryPeakBytes        uint64 `c:"memory_peak_bytes"`
	JobsCompleted          uint64 `c:"jobs_completed"`
	JobsFailed             uint64 `c:"jobs_failed"`
	JobsCancelled          uint64 `c:"jobs_cancelled"`
	ParamsResident         uint64 `c:"params_resident"`
	JobsRetained           uint64 `c:"jobs_retained"`
	PartitionsCPURetried   uint64 `c:"partitions_cpu_retried"`
	TimelineEventsDropped  uint64 `c:"timeline_events_dropped"`
}

// Admission mirrors struct cuzk_admission, from [EngineAdmission].
type Admission struct {
	StructSize       uint32 `c:"struct_size"`
	Admit            uint8  `c:"admit"`
	Reason           uint32 `c:"reason"`
	PartitionsPerJob uint32 `c:"partitions_per_job"`
	PartitionsFit    uint64 `c:"partitions_fit"`
	JobsFit          uint64 `c:"jobs_fit"`
	PartitionBytes   uint64 `c:"partition_bytes"`
	ParamsBytes      uint64 `c:"params_bytes"`
	QueuedBytes      uint64 `c:"queued_bytes"`
	FreeBytes        uint64 `c:"free_bytes"`
	JobSlots         uint64 `c:"job_slots"`
	CPUFallbackBytes uint64 `c:"cpu_fallback_bytes"`
	CPUFallbackFits  uint8  `c:"cpu_fallback_fits"`
}

// TimelineEvent mirrors struct cuzk_timeline_event. A [TimelineFunc] gets a copy, with the
// detail text as a Go string beside it.
type TimelineEvent struct {
	StructSize uint32         `c:"struct_size"`
	Kind       EventKind      `c:"kind"`
	TUs        uint64         `c:"t_us"`
	JobID      uint64         `c:"job_id"`
	Partition  uint32         `c:"partition"`
	Worker     uint32         `c:"worker"`
	Value      uint64         `c:"value"`
	detail     unsafe.Pointer `c:"detail"`
}

// LogRecord mirrors struct cuzk_log_record. A [LogFunc] gets a copy, with the target and the
// message as Go strings beside it.
type LogRecord struct {
	StructSize uint32         `c:"struct_size"`
	Level      uint32         `c:"level"`
	UnixUs     uint64         `c:"unix_us"`
	target     unsafe.Pointer `c:"target"`
	message    unsafe.Pointer `c:"message"`
}

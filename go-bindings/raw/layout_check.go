package raw

// The C side of the mirror checks: the header's sizes, field offsets and constant values, as
// cgo sees them. cgo cannot be used in _test.go files, so layout_test.go compares through the
// unexported funcs here. The sizes are also checked at compile time below: the functions cast
// the mirrors to the C structs, and the library writes whole structs into them.

/*
#include <stddef.h>
#include "cuzk.h"

typedef struct {
  const char *type;
  const char *field;
  size_t offset;
  size_t size;
} cuzk_go_field;

#define CUZK_GO_FIELD(t, f) {#t, #f, offsetof(struct t, f), sizeof(((struct t *)0)->f)}

// Every field of every struct the package mirrors; layout_test.go checks this list against
// the header's text, so a field added there and missing here fails the test.
static const cuzk_go_field cuzk_go_fields[] = {
  CUZK_GO_FIELD(cuzk_config, struct_size),
  CUZK_GO_FIELD(cuzk_config, synthesis_workers),
  CUZK_GO_FIELD(cuzk_config, synthesis_lookahead),
  CUZK_GO_FIELD(cuzk_config, memory_budget_bytes),
  CUZK_GO_FIELD(cuzk_config, params_dir),
  CUZK_GO_FIELD(cuzk_config, self_check),
  CUZK_GO_FIELD(cuzk_config, timeline_stderr),
  CUZK_GO_FIELD(cuzk_config, timeline_file),
  CUZK_GO_FIELD(cuzk_config, job_retention_ms),
  CUZK_GO_FIELD(cuzk_config, max_c1_bytes),
  CUZK_GO_FIELD(cuzk_config, device_cooldown_ms),
  CUZK_GO_FIELD(cuzk_config, max_jobs),
  CUZK_GO_FIELD(cuzk_config, _reserved),

  CUZK_GO_FIELD(cuzk_job_request, struct_size),
  CUZK_GO_FIELD(cuzk_job_request, priority),
  CUZK_GO_FIELD(cuzk_job_request, c1_ptr),
  CUZK_GO_FIELD(cuzk_job_request, c1_len),
  CUZK_GO_FIELD(cuzk_job_request, sector_id),
  CUZK_GO_FIELD(cuzk_job_request, prover_id),
  CUZK_GO_FIELD(cuzk_job_request, fixture_partitions),
  CUZK_GO_FIELD(cuzk_job_request, fixture_layers),

  CUZK_GO_FIELD(cuzk_post_request, struct_size),
  CUZK_GO_FIELD(cuzk_post_request, priority),
  CUZK_GO_FIELD(cuzk_post_request, registered_proof),
  CUZK_GO_FIELD(cuzk_post_request, prover_id),
  CUZK_GO_FIELD(cuzk_post_request, randomness),
  CUZK_GO_FIELD(cuzk_post_request, vanilla_proofs),
  CUZK_GO_FIELD(cuzk_post_request, vanilla_count),
  CUZK_GO_FIELD(cuzk_post_request, partition_index),

  CUZK_GO_FIELD(cuzk_engine_report, struct_size),
  CUZK_GO_FIELD(cuzk_engine_report, devices),
  CUZK_GO_FIELD(cuzk_engine_report, devices_busy),
  CUZK_GO_FIELD(cuzk_engine_report, devices_out_of_service),
  CUZK_GO_FIELD(cuzk_engine_report, jobs_in_flight),
  CUZK_GO_FIELD(cuzk_engine_report, partitions_queued),
  CUZK_GO_FIELD(cuzk_engine_report, partitions_synthesizing),
  CUZK_GO_FIELD(cuzk_engine_report, partitions_ready),
  CUZK_GO_FIELD(cuzk_engine_report, partitions_proving),
  CUZK_GO_FIELD(cuzk_engine_report, memory_budget_bytes),
  CUZK_GO_FIELD(cuzk_engine_report, memory_reserved_bytes),
  CUZK_GO_FIELD(cuzk_engine_report, memory_peak_bytes),
  CUZK_GO_FIELD(cuzk_engine_report, jobs_completed),
  CUZK_GO_FIELD(cuzk_engine_report, jobs_failed),
  CUZK_GO_FIELD(cuzk_engine_report, jobs_cancelled),
  CUZK_GO_FIELD(cuzk_engine_report, params_resident),
  CUZK_GO_FIELD(cuzk_engine_report, jobs_retained),
  CUZK_GO_FIELD(cuzk_engine_report, partitions_cpu_retried),
  CUZK_GO_FIELD(cuzk_engine_report, timeline_events_dropped),

  CUZK_GO_FIELD(cuzk_admission, struct_size),
  CUZK_GO_FIELD(cuzk_admission, admit),
  CUZK_GO_FIELD(cuzk_admission, reason),
  CUZK_GO_FIELD(cuzk_admission, partitions_per_job),
  CUZK_GO_FIELD(cuzk_admission, partitions_fit),
  CUZK_GO_FIELD(cuzk_admission, jobs_fit),
  CUZK_GO_FIELD(cuzk_admission, partition_bytes),
  CUZK_GO_FIELD(cuzk_admission, params_bytes),
  CUZK_GO_FIELD(cuzk_admission, queued_bytes),
  CUZK_GO_FIELD(cuzk_admission, free_bytes),
  CUZK_GO_FIELD(cuzk_admission, job_slots),
  CUZK_GO_FIELD(cuzk_admission, cpu_fallback_bytes),
  CUZK_GO_FIELD(cuzk_admission, cpu_fallback_fits),

  CUZK_GO_FIELD(cuzk_update_request, struct_size),
  CUZK_GO_FIELD(cuzk_update_request, priority),
  CUZK_GO_FIELD(cuzk_update_request, registered_proof),
  CUZK_GO_FIELD(cuzk_update_request, comm_r_old),
  CUZK_GO_FIELD(cuzk_update_request, comm_r_new),
  CUZK_GO_FIELD(cuzk_update_request, comm_d_new),
  CUZK_GO_FIELD(cuzk_update_request, vanilla_proofs),
  CUZK_GO_FIELD(cuzk_update_request, vanilla_count),

  CUZK_GO_FIELD(cuzk_timeline_event, struct_size),
  CUZK_GO_FIELD(cuzk_timeline_event, kind),
  CUZK_GO_FIELD(cuzk_timeline_event, t_us),
  CUZK_GO_FIELD(cuzk_timeline_event, job_id),
  CUZK_GO_FIELD(cuzk_timeline_event, partition),
  CUZK_GO_FIELD(cuzk_timeline_event, worker),
  CUZK_GO_FIELD(cuzk_timeline_event, value),
  CUZK_GO_FIELD(cuzk_timeline_event, detail),

  CUZK_GO_FIELD(cuzk_log_record, struct_size),
  CUZK_GO_FIELD(cuzk_log_record, level),
  CUZK_GO_FIELD(cuzk_log_record, unix_us),
  CUZK_GO_FIELD(cuzk_log_record, target),
  CUZK_GO_FIELD(cuzk_log_record, message),
};

static size_t cuzk_go_field_count(void) {
  return sizeof cuzk_go_fields / sizeof cuzk_go_fields[0];
}

static const cuzk_go_field *cuzk_go_field_at(size_t i) {
  return &cuzk_go_fields[i];
}
*/
import "C"

import "unsafe"

// Each mirror is exactly as large as its C struct; the build fails otherwise (an index out of
// range when the mirror is larger, a negative constant when it is smaller).
var (
	_ = [1]struct{}{}[unsafe.Sizeof(Config{})-C.sizeof_struct_cuzk_config]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_config-unsafe.Sizeof(Config{})]
	_ = [1]struct{}{}[unsafe.Sizeof(JobRequest{})-C.sizeof_struct_cuzk_job_request]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_job_request-unsafe.Sizeof(JobRequest{})]
	_ = [1]struct{}{}[unsafe.Sizeof(PostRequest{})-C.sizeof_struct_cuzk_post_request]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_post_request-unsafe.Sizeof(PostRequest{})]
	_ = [1]struct{}{}[unsafe.Sizeof(UpdateRequest{})-C.sizeof_struct_cuzk_update_request]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_update_request-unsafe.Sizeof(UpdateRequest{})]
	_ = [1]struct{}{}[unsafe.Sizeof(EngineReport{})-C.sizeof_struct_cuzk_engine_report]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_engine_report-unsafe.Sizeof(EngineReport{})]
	_ = [1]struct{}{}[unsafe.Sizeof(Admission{})-C.sizeof_struct_cuzk_admission]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_admission-unsafe.Sizeof(Admission{})]
	_ = [1]struct{}{}[unsafe.Sizeof(TimelineEvent{})-C.sizeof_struct_cuzk_timeline_event]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_timeline_event-unsafe.Sizeof(TimelineEvent{})]
	_ = [1]struct{}{}[unsafe.Sizeof(LogRecord{})-C.sizeof_struct_cuzk_log_record]
	_ = [1]struct{}{}[C.sizeof_struct_cuzk_log_record-unsafe.Sizeof(LogRecord{})]
)

// cField is one field of a C struct as the C compiler lays it out.
type cField struct {
	Struct, Field string
	Offset, Size  uintptr
}

// cFields lists the fields of the structs the package mirrors (cuzk_go_fields above).
func cFields() []cField {
	n := int(C.cuzk_go_field_count())
	out := make([]cField, 0, n)
	for i := 0; i < n; i++ {
		f := C.cuzk_go_field_at(C.size_t(i))
		out = append(out, cField{Struct: C.GoString(f._type), Field: C.GoString(f.field),
			Offset: uintptr(f.offset), Size: uintptr(f.size)})
	}
	return out
}

// cStructSizes is sizeof of each struct the package mirrors.
func cStructSizes() map[string]uintptr {
	return map[string]uintptr{
		"cuzk_config":         C.sizeof_struct_cuzk_config,
		"cuzk_job_request":    C.sizeof_struct_cuzk_job_request,
		"cuzk_post_request":   C.sizeof_struct_cuzk_post_request,
		"cuzk_update_request": C.sizeof_struct_cuzk_update_request,
		"cuzk_engine_report":  C.sizeof_struct_cuzk_engine_report,
		"cuzk_admission":      C.sizeof_struct_cuzk_admission,
		"cuzk_timeline_event": C.sizeof_struct_cuzk_timeline_event,
		"cuzk_log_record":     C.sizeof_struct_cuzk_log_record,
	}
}

// cConst pairs a Go constant of the package with the header's value of the constant it
// mirrors. Name is the C name in lower case: the repository's documentation check reads
// upper-case string literals that begin with the library's prefix as environment variables.
type cConst struct {
	Name      string
	Go, Value int64
}

// cConstants lists every enum value and numeric define of the header with its Go mirror.
func cConstants() []cConst {
	return []cConst{
		{"cuzk_status_ok", int64(StatusOK), C.CUZK_STATUS_OK},
		{"cuzk_status_invalid_argument", int64(StatusInvalidArgument), C.CUZK_STATUS_INVALID_ARGUMENT},
		{"cuzk_status_invalid_input", int64(StatusInvalidInput), C.CUZK_STATUS_INVALID_INPUT},
		{"cuzk_status_unsupported", int64(StatusUnsupported), C.CUZK_STATUS_UNSUPPORTED},
		{"cuzk_status_params", int64(StatusParams), C.CUZK_STATUS_PARAMS},
		{"cuzk_status_proving", int64(StatusProving), C.CUZK_STATUS_PROVING},
		{"cuzk_status_verify_failed", int64(StatusVerifyFailed), C.CUZK_STATUS_VERIFY_FAILED},
		{"cuzk_status_cancelled", int64(StatusCancelled), C.CUZK_STATUS_CANCELLED},
		{"cuzk_status_timeout", int64(StatusTimeout), C.CUZK_STATUS_TIMEOUT},
		{"cuzk_status_not_found", int64(StatusNotFound), C.CUZK_STATUS_NOT_FOUND},
		{"cuzk_status_not_running", int64(StatusNotRunning), C.CUZK_STATUS_NOT_RUNNING},
		{"cuzk_status_resource_exhausted", int64(StatusResourceExhausted), C.CUZK_STATUS_RESOURCE_EXHAUSTED},
		{"cuzk_status_panic", int64(StatusPanic), C.CUZK_STATUS_PANIC},
		{"cuzk_status_internal", int64(StatusInternal), C.CUZK_STATUS_INTERNAL},
		{"cuzk_status_already_running", int64(StatusAlreadyRunning), C.CUZK_STATUS_ALREADY_RUNNING},
		{"cuzk_status_in_callback", int64(StatusInCallback), C.CUZK_STATUS_IN_CALLBACK},

		{"cuzk_job_state_running", int64(JobStateRunning), C.CUZK_JOB_STATE_RUNNING},
		{"cuzk_job_state_succeeded", int64(JobStateSucceeded), C.CUZK_JOB_STATE_SUCCEEDED},
		{"cuzk_job_state_failed", int64(JobStateFailed), C.CUZK_JOB_STATE_FAILED},

		{"cuzk_event_kind_job_queued", int64(EventKindJobQueued), C.CUZK_EVENT_KIND_JOB_QUEUED},
		{"cuzk_event_kind_synth_start", int64(EventKindSynthStart), C.CUZK_EVENT_KIND_SYNTH_START},
		{"cuzk_event_kind_synth_end", int64(EventKindSynthEnd), C.CUZK_EVENT_KIND_SYNTH_END},
		{"cuzk_event_kind_chan_send", int64(EventKindChanSend), C.CUZK_EVENT_KIND_CHAN_SEND},
		{"cuzk_event_kind_gpu_pickup", int64(EventKindGPUPickup), C.CUZK_EVENT_KIND_GPU_PICKUP},
		{"cuzk_event_kind_gpu_start", int64(EventKindGPUStart), C.CUZK_EVENT_KIND_GPU_START},
		{"cuzk_event_kind_gpu_end", int64(EventKindGPUEnd), C.CUZK_EVENT_KIND_GPU_END},
		{"cuzk_event_kind_job_done", int64(EventKindJobDone), C.CUZK_EVENT_KIND_JOB_DONE},
		{"cuzk_event_kind_job_failed", int64(EventKindJobFailed), C.CUZK_EVENT_KIND_JOB_FAILED},
		{"cuzk_event_kind_job_cancelled", int64(EventKindJobCancelled), C.CUZK_EVENT_KIND_JOB_CANCELLED},

		{"cuzk_proof_bytes", ProofBytes, C.CUZK_PROOF_BYTES},
		{"cuzk_no_partition", NoPartition, C.CUZK_NO_PARTITION},
		{"cuzk_admit_ok", AdmitOK, C.CUZK_ADMIT_OK},
		{"cuzk_admit_memory", AdmitMemory, C.CUZK_ADMIT_MEMORY},
		{"cuzk_admit_max_jobs", AdmitMaxJobs, C.CUZK_ADMIT_MAX_JOBS},
	}
}

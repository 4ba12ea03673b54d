package raw

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ConfigDefault is cuzk_config_default: the library's default configuration, StructSize set.
func ConfigDefault() Config {
	var c Config
	C.cuzk_config_default((*C.cuzk_config)(unsafe.Pointer(&c)))
	c.paramsDir, c.timelineFile = nil, nil
	return c
}

// EngineStart is cuzk_engine_start with cfg, whose params_dir and timeline_file are set from
// paramsDir and timelineFile ("": NULL, the library's default). Starting again with the same
// configuration is not an error; with another it is StatusAlreadyRunning.
func EngineStart(cfg Config, paramsDir, timelineFile string) error {
	dir, file := cString(paramsDir), cString(timelineFile)
	defer C.free(unsafe.Pointer(dir))
	defer C.free(unsafe.Pointer(file))
	cfg.paramsDir, cfg.timelineFile = unsafe.Pointer(dir), unsafe.Pointer(file)
	var cerr C.cuzk_error
	return takeError(C.cuzk_engine_start((*C.cuzk_config)(unsafe.Pointer(&cfg)), &cerr), &cerr)
}

// EngineShutdown is cuzk_engine_shutdown_err: it shuts the engine down and waits for its
// threads. Idempotent; StatusInCallback from a timeline callback.
func EngineShutdown() error {
	var cerr C.cuzk_error
	return takeError(C.cuzk_engine_shutdown_err(&cerr), &cerr)
}

// JobRequestDefault is cuzk_job_request_default: an empty request (priority 0, the proof
// type's own shape), StructSize set.
func JobRequestDefault() JobRequest {
	var r JobRequest
	C.cuzk_job_request_default((*C.cuzk_job_request)(unsafe.Pointer(&r)))
	r.c1Ptr, r.c1Len = nil, 0
	return r
}

// Submit is cuzk_submit: it validates req, whose C1 output is c1, and queues it; it returns the
// job's id. c1 is copied into C memory for the call (it travels inside the request).
func Submit(req JobRequest, c1 []byte) (uint64, error) {
	req.c1Ptr, req.c1Len = nil, uintptr(len(c1))
	if len(c1) > 0 {
		p := C.CBytes(c1)
		defer C.free(p)
		req.c1Ptr = p
	}
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_submit((*C.cuzk_job_request)(unsafe.Pointer(&req)), &id, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(id), nil
}

// Await is cuzk_await: it waits up to timeoutMs (negative: forever; 0: just look) for a job and
// returns its proof. StatusTimeout leaves the job running; any other result ends it.
func Await(jobID uint64, timeoutMs int64) ([]byte, error) {
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_await(C.uint64_t(jobID), C.int64_t(timeoutMs), &out, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// Cancel is cuzk_cancel.
func Cancel(jobID uint64) error {
	var cerr C.cuzk_error
	return takeError(C.cuzk_cancel(C.uint64_t(jobID), &cerr), &cerr)
}

// DeviceSetEnabled is cuzk_device_set_enabled: it takes prover device i out of service, or
// puts it back.
func DeviceSetEnabled(device uint32, enabled bool) error {
	var cerr C.cuzk_error
	return takeError(C.cuzk_device_set_enabled(C.uint32_t(device), C.bool(enabled), &cerr), &cerr)
}

// Poll is cuzk_poll: a job's state, without waiting (JobStateFailed with the error on failure).
func Poll(jobID uint64) (JobState, error) {
	var st C.cuzk_job_state
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_poll(C.uint64_t(jobID), &st, &cerr), &cerr); err != nil {
		return JobStateFailed, err
	}
	return JobState(st), nil
}

// SealCommitPhase2 is cuzk_seal_commit_phase2: it proves the C1 output c1 for sectorID and
// proverID, blocking, and returns partitions × ProofBytes proof bytes (for non-interactive
// PoRep, their SnarkPack v2 aggregate). It starts the engine with defaults if none runs.
func SealCommitPhase2(c1 []byte, sectorID uint64, proverID [32]byte) ([]byte, error) {
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	st := C.cuzk_seal_commit_phase2(bytesPtr(c1), C.size_t(len(c1)), C.uint64_t(sectorID),
		(*[32]C.uint8_t)(unsafe.Pointer(&proverID)), &out, &cerr)
	runtime.KeepAlive(c1)
	runtime.KeepAlive(&proverID)
	if err := takeError(st, &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// SealCommitPhase2CircuitProofs is cuzk_seal_commit_phase2_circuit_proofs: as
// SealCommitPhase2, but a non-interactive PoRep sector's partition proofs come back as they are
// (partitions × ProofBytes), not aggregated. A nil proverID takes the C1 output's replica id as
// it is.
func SealCommitPhase2CircuitProofs(c1 []byte, sectorID uint64, proverID *[32]byte) ([]byte, error) {
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	st := C.cuzk_seal_commit_phase2_circuit_proofs(bytesPtr(c1), C.size_t(len(c1)), C.uint64_t(sectorID),
		(*[32]C.uint8_t)(unsafe.Pointer(proverID)), &out, &cerr)
	runtime.KeepAlive(c1)
	runtime.KeepAlive(proverID)
	if err := takeError(st, &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// VerifySeal is cuzk_verify_seal: whether proof is valid for the C1 output's sector. It needs
// no running engine.
func VerifySeal(c1 []byte, sectorID uint64, proverID [32]byte, proof []byte) (bool, error) {
	var valid C.bool
	var cerr C.cuzk_error
	st := C.cuzk_verify_seal(bytesPtr(c1), C.size_t(len(c1)), C.uint64_t(sectorID),
		(*[32]C.uint8_t)(unsafe.Pointer(&proverID)), bytesPtr(proof), C.size_t(len(proof)), &valid, &cerr)
	runtime.KeepAlive(c1)
	runtime.KeepAlive(proof)
	runtime.KeepAlive(&proverID)
	if err := takeError(st, &cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}

// EngineStatus is cuzk_engine_status: a snapshot of the running engine, StructSize set to the
// bytes the library wrote. Allowed inside timeline and log callbacks.
func EngineStatus() (EngineReport, error) {
	r := EngineReport{StructSize: uint32(unsafe.Sizeof(EngineReport{}))}
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_engine_status((*C.cuzk_engine_report)(unsafe.Pointer(&r)), &cerr), &cerr); err != nil {
		return EngineReport{}, err
	}
	return r, nil
}

// EngineMetrics is cuzk_engine_metrics: the engine's state as MetricsText (Prometheus text
// exposition) or MetricsJSON.
func EngineMetrics(format uint32) ([]byte, error) {
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_engine_metrics(C.uint32_t(format), &out, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// EngineAdmission is cuzk_engine_admission: whether one more job of registeredProof (its
// abi.RegisteredSealProof number) at priority would start now, and how many could.
// fixturePartitions and fixtureLayers select a test shape (0: the type's own).
func EngineAdmission(registeredProof int64, priority int32, fixturePartitions, fixtureLayers uint32) (Admission, error) {
	a := Admission{StructSize: uint32(unsafe.Sizeof(Admission{}))}
	var cerr C.cuzk_error
	st := C.cuzk_engine_admission(C.int64_t(registeredProof), C.int32_t(priority),
		C.uint32_t(fixturePartitions), C.uint32_t(fixtureLayers), (*C.cuzk_admission)(unsafe.Pointer(&a)), &cerr)
	if err := takeError(st, &cerr); err != nil {
		return Admission{}, err
	}
	return a, nil
}

// StatusName is cuzk_status_name: "OK", "INVALID_INPUT", ...; "UNKNOWN" for other values.
func StatusName(status int32) string {
	return C.GoString(C.cuzk_status_name(C.int32_t(status)))
}

// EventKindName is cuzk_event_kind_name: "SYNTH_START", ...; "UNKNOWN" for other values.
func EventKindName(kind int32) string {
	return C.GoString(C.cuzk_event_kind_name(C.int32_t(kind)))
}

// Version is cuzk_version: the library's version ("0.1.0").
func Version() string {
	return C.GoString(C.cuzk_version())
}

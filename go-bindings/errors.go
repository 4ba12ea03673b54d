package cuzk

/*
#include "cuzk.h"
*/
import "C"

import "fmt"

// Status is the library's status code (cuzk_status in cuzk.h).
type Status int32

// Status codes, defined from include/cuzk.h (whose drift check covers them).
const (
	StatusOK                Status = C.CUZK_STATUS_OK
	StatusInvalidArgument   Status = C.CUZK_STATUS_INVALID_ARGUMENT
	StatusInvalidInput      Status = C.CUZK_STATUS_INVALID_INPUT
	StatusUnsupported       Status = C.CUZK_STATUS_UNSUPPORTED
	StatusParams            Status = C.CUZK_STATUS_PARAMS
	StatusProving           Status = C.CUZK_STATUS_PROVING
	StatusVerifyFailed      Status = C.CUZK_STATUS_VERIFY_FAILED
	StatusCancelled         Status = C.CUZK_STATUS_CANCELLED
	StatusTimeout           Status = C.CUZK_STATUS_TIMEOUT
	StatusNotFound          Status = C.CUZK_STATUS_NOT_FOUND
	StatusNotRunning        Status = C.CUZK_STATUS_NOT_RUNNING
	StatusResourceExhausted Status = C.CUZK_STATUS_RESOURCE_EXHAUSTED
	StatusPanic             Status = C.CUZK_STATUS_PANIC
	StatusInternal          Status = C.CUZK_STATUS_INTERNAL
	StatusAlreadyRunning    Status = C.CUZK_STATUS_ALREADY_RUNNING
	// StatusInCallback: called from a timeline callback where it would wait for the thread
	// running the callback (Close, Start, SealCommitPhase2, a waiting Await).
	StatusInCallback Status = C.CUZK_STATUS_IN_CALLBACK
)

// String is the library's name of the status ("INVALID_INPUT", ...).
func (s Status) String() string {
	name := C.GoString(C.cuzk_status_name(C.int32_t(s)))
	if name == "UNKNOWN" {
		return fmt.Sprintf("STATUS(%d)", int32(s))
	}
	return name
}

// Error is a failure reported by the library.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "cuzk: " + e.Status.String() + ": " + e.Message }

// Is matches sentinel errors by status: errors.Is(err, ErrInvalidInput).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinel errors for errors.Is.
var (
	ErrInvalidArgument   = &Error{Status: StatusInvalidArgument}
	ErrInvalidInput      = &Error{Status: StatusInvalidInput}
	ErrUnsupported       = &Error{Status: StatusUnsupported}
	ErrParams            = &Error{Status: StatusParams}
	ErrProving           = &Error{Status: StatusProving}
	ErrVerifyFailed      = &Error{Status: StatusVerifyFailed}
	ErrCancelled         = &Error{Status: StatusCancelled}
	ErrTimeout           = &Error{Status: StatusTimeout}
	ErrNotFound          = &Error{Status: StatusNotFound}
	ErrNotRunning        = &Error{Status: StatusNotRunning}
	ErrResourceExhausted = &Error{Status: StatusResourceExhausted}
	ErrPanic             = &Error{Status: StatusPanic}
	ErrInternal          = &Error{Status: StatusInternal}
	ErrAlreadyRunning    = &Error{Status: StatusAlreadyRunning}
	ErrInCallback        = &Error{Status: StatusInCallback}
)

// cancelledError is returned by Await when its context ends: it matches both the context's
// error and ErrCancelled.
type cancelledError struct {
	ctxErr error
	job    JobID
}

func (e *cancelledError) Error() string {
	return fmt.Sprintf("cuzk: job %d cancelled: %v", e.job, e.ctxErr)
}

func (e *cancelledError) Unwrap() []error { return []error{e.ctxErr, ErrCancelled} }

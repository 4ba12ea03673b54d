package cuzk

import (
	"fmt"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
)

// Status is the library's status code (cuzk_status in cuzk.h).
type Status int32

// Status codes, those of include/cuzk.h (through package raw, whose tests check them against
// the header).
const (
	StatusOK                Status = Status(raw.StatusOK)
	StatusInvalidArgument   Status = Status(raw.StatusInvalidArgument)
	StatusInvalidInput      Status = Status(raw.StatusInvalidInput)
	StatusUnsupported       Status = Status(raw.StatusUnsupported)
	StatusParams            Status = Status(raw.StatusParams)
	StatusProving           Status = Status(raw.StatusProving)
	StatusVerifyFailed      Status = Status(raw.StatusVerifyFailed)
	StatusCancelled         Status = Status(raw.StatusCancelled)
	StatusTimeout           Status = Status(raw.StatusTimeout)
	StatusNotFound          Status = Status(raw.StatusNotFound)
	StatusNotRunning        Status = Status(raw.StatusNotRunning)
	StatusResourceExhausted Status = Status(raw.StatusResourceExhausted)
	StatusPanic             Status = Status(raw.StatusPanic)
	StatusInternal          Status = Status(raw.StatusInternal)
	StatusAlreadyRunning    Status = Status(raw.StatusAlreadyRunning)
	// StatusInCallback: called from a timeline callback where it would wait for the thread
	// running the callback (Close, Start, SealCommitPhase2, a waiting Await).
	StatusInCallback Status = Status(raw.StatusInCallback)
)

// String is the library's name of the status ("INVALID_INPUT", ...).
func (s Status) String() string {
	name := raw.StatusName(int32(s))
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

// fromRaw turns an error of package raw (the library's status and message) into an *Error.
func fromRaw(err error) error {
	if e, ok := err.(*raw.Error); ok {
		return &Error{Status: Status(e.Status), Message: e.Message}
	}
	return err
}

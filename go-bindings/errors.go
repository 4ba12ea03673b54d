package cuzk

import "fmt"

// Status is the library's status code (cuzk_status in cuzk.h).
type Status int32

// Status codes; the numbers match include/cuzk.h.
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
)

var statusNames = map[Status]string{
	StatusOK: "OK", StatusInvalidArgument: "INVALID_ARGUMENT", StatusInvalidInput: "INVALID_INPUT",
	StatusUnsupported: "UNSUPPORTED", StatusParams: "PARAMS", StatusProving: "PROVING",
	StatusVerifyFailed: "VERIFY_FAILED", StatusCancelled: "CANCELLED", StatusTimeout: "TIMEOUT",
	StatusNotFound: "NOT_FOUND", StatusNotRunning: "NOT_RUNNING", StatusResourceExhausted: "RESOURCE_EXHAUSTED",
	StatusPanic: "PANIC", StatusInternal: "INTERNAL", StatusAlreadyRunning: "ALREADY_RUNNING",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("STATUS(%d)", int32(s))
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

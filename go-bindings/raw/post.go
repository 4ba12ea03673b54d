package raw

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import "unsafe"

// PostRequestDefault is cuzk_post_request_default: an empty request (priority 0, every
// partition), StructSize set.
func PostRequestDefault() PostRequest {
	var r PostRequest
	C.cuzk_post_request_default((*C.cuzk_post_request)(unsafe.Pointer(&r)))
	r.vanillaProofs, r.vanillaCount = nil, 0
	return r
}

// PostSubmit is cuzk_post_submit: it validates req, whose vanilla proofs (one per sector) are
// vanilla, and queues it; it returns the job's id, for Await, Poll and Cancel.
func PostSubmit(req PostRequest, vanilla [][]byte) (uint64, error) {
	free := setVanilla(&req, vanilla)
	defer free()
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_post_submit((*C.cuzk_post_request)(unsafe.Pointer(&req)), &id, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(id), nil
}

// GeneratePost is cuzk_generate_post: it proves req, whose vanilla proofs are vanilla,
// blocking, and returns the proof bytes. It starts the engine with defaults if none runs.
func GeneratePost(req PostRequest, vanilla [][]byte) ([]byte, error) {
	free := setVanilla(&req, vanilla)
	defer free()
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_generate_post((*C.cuzk_post_request)(unsafe.Pointer(&req)), &out, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// UpdateRequestDefault is cuzk_update_request_default: an empty request (priority 0),
// StructSize set.
func UpdateRequestDefault() UpdateRequest {
	var r UpdateRequest
	C.cuzk_update_request_default((*C.cuzk_update_request)(unsafe.Pointer(&r)))
	r.vanillaProofs, r.vanillaCount = nil, 0
	return r
}

// UpdateSubmit is cuzk_update_submit: it validates req, whose vanilla proofs (one per
// partition) are vanilla, and queues it; it returns the job's id, for Await, Poll and Cancel.
func UpdateSubmit(req UpdateRequest, vanilla [][]byte) (uint64, error) {
	ptr, count, free := cVanilla(vanilla)
	defer free()
	req.vanillaProofs, req.vanillaCount = ptr, count
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_update_submit((*C.cuzk_update_request)(unsafe.Pointer(&req)), &id, &cerr), &cerr); err != nil {
		return 0, err
	}
	return uint64(id), nil
}

// GenerateUpdate is cuzk_generate_update: it proves req, whose vanilla proofs are vanilla,
// blocking, and returns the proof bytes. It starts the engine with defaults if none runs.
func GenerateUpdate(req UpdateRequest, vanilla [][]byte) ([]byte, error) {
	ptr, count, free := cVanilla(vanilla)
	defer free()
	req.vanillaProofs, req.vanillaCount = ptr, count
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_generate_update((*C.cuzk_update_request)(unsafe.Pointer(&req)), &out, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// setVanilla copies the vanilla proofs, and the array of their slices, into C memory (they
// travel inside the request) and points req at them; free releases them, once.
func setVanilla(req *PostRequest, vanilla [][]byte) (free func()) {
	ptr, count, free := cVanilla(vanilla)
	req.vanillaProofs, req.vanillaCount = ptr, count
	return free
}

// cVanilla copies the vanilla proofs, and the array of their slices, into C memory; free
// releases them, once.
func cVanilla(vanilla [][]byte) (ptr unsafe.Pointer, count uintptr, free func()) {
	n := len(vanilla)
	if n == 0 {
		return nil, 0, func() {}
	}
	slices := unsafe.Slice((*C.cuzk_slice)(C.malloc(C.size_t(n)*C.size_t(unsafe.Sizeof(C.cuzk_slice{})))), n)
	for i, p := range vanilla {
		slices[i].ptr = (*C.uint8_t)(C.CBytes(p))
		slices[i].len = C.size_t(len(p))
	}
	return unsafe.Pointer(&slices[0]), uintptr(n), func() {
		for i := range slices {
			C.free(unsafe.Pointer(slices[i].ptr))
		}
		C.free(unsafe.Pointer(&slices[0]))
	}
}

package cuzk

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

// PartitionProof is one WindowPoSt partition's proof, as filecoin-ffi's
// GenerateSinglePartitionWindowPoStWithVanilla returns it.
type PartitionProof proof.PoStProof

// PoStRequest is one WindowPoSt or WinningPoSt job for [Engine.SubmitPoSt].
type PoStRequest struct {
	ProofType abi.RegisteredPoStProof
	MinerID   abi.ActorID
	// Randomness is the chain's; its top two bits are cleared (as filecoin-ffi's callers do)
	// to make it a field element.
	Randomness abi.PoStRandomness
	// VanillaProofs: one per sector, as filecoin-ffi's GenerateSingleVanillaProof returns them.
	VanillaProofs [][]byte
	// Partition: WindowPoSt only, prove this partition of the sectors given; -1: every one.
	Partition int64
	// Priority orders jobs within their class (PoSt goes before PoRep whatever the priority).
	Priority int32
}

// postRequest fills a C request for r. The vanilla proofs and the array of their slices are
// copied into C memory (cgo forbids Go pointers in memory passed to C); free releases them,
// once.
func postRequest(r PoStRequest) (req C.cuzk_post_request, free func(), err error) {
	if len(r.Randomness) != 32 {
		return req, func() {}, &Error{Status: StatusInvalidArgument, Message: "randomness is not 32 bytes"}
	}
	C.cuzk_post_request_default(&req)
	req.registered_proof = C.int64_t(r.ProofType)
	req.priority = C.int32_t(r.Priority)
	req.partition_index = C.int64_t(r.Partition)
	pid := ProverID(r.MinerID)
	for i := range pid {
		req.prover_id[i] = C.uint8_t(pid[i])
	}
	for i := range r.Randomness {
		req.randomness[i] = C.uint8_t(r.Randomness[i])
	}
	req.randomness[31] &= 0x3f
	n := len(r.VanillaProofs)
	if n == 0 {
		return req, func() {}, nil
	}
	slices := (*[1 << 28]C.cuzk_slice)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.cuzk_slice{}))))[:n:n]
	for i, p := range r.VanillaProofs {
		slices[i].ptr = (*C.uint8_t)(C.CBytes(p))
		slices[i].len = C.size_t(len(p))
	}
	req.vanilla_proofs = &slices[0]
	req.vanilla_count = C.size_t(n)
	return req, func() {
		for i := range slices {
			C.free(unsafe.Pointer(slices[i].ptr))
		}
		C.free(unsafe.Pointer(&slices[0]))
	}, nil
}

// generatePoSt proves r on the global engine (started with defaults if none runs), blocking.
func generatePoSt(r PoStRequest) ([]byte, error) {
	req, free, err := postRequest(r)
	defer free()
	if err != nil {
		return nil, err
	}
	var out C.cuzk_bytes
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_generate_post(&req, &out, &cerr), &cerr); err != nil {
		return nil, err
	}
	return takeBytes(&out), nil
}

// wholePoSt proves every partition of a PoSt on the global engine: one proof of the type.
func wholePoSt(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte) ([]proof.PoStProof, error) {
	b, err := generatePoSt(PoStRequest{ProofType: proofType, MinerID: minerID, Randomness: randomness,
		VanillaProofs: proofs, Partition: -1})
	if err != nil {
		return nil, err
	}
	return []proof.PoStProof{{PoStProof: proofType, ProofBytes: b}}, nil
}

// GenerateWinningPoStWithVanilla is the drop-in for filecoin-ffi's: it proves a WinningPoSt
// from its sector's vanilla proof and returns filecoin-proofs' proof, verified. It starts the
// engine with defaults if none runs, and blocks until done.
func GenerateWinningPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte) ([]proof.PoStProof, error) {
	return wholePoSt(proofType, minerID, randomness, proofs)
}

// GenerateWindowPoStWithVanilla is the drop-in for filecoin-ffi's: every partition of a
// WindowPoSt from its sectors' vanilla proofs, one proof of partitions × 192 bytes.
func GenerateWindowPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte) ([]proof.PoStProof, error) {
	return wholePoSt(proofType, minerID, randomness, proofs)
}

// GenerateSinglePartitionWindowPoStWithVanilla is the drop-in for filecoin-ffi's: partition
// partitionIndex of a WindowPoSt, from that partition's sectors' vanilla proofs.
func GenerateSinglePartitionWindowPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error) {
	b, err := generatePoSt(PoStRequest{ProofType: proofType, MinerID: minerID, Randomness: randomness,
		VanillaProofs: proofs, Partition: int64(partitionIndex)})
	if err != nil {
		return nil, err
	}
	return &PartitionProof{PoStProof: proofType, ProofBytes: b}, nil
}

// SubmitPoSt validates a PoSt job and queues it; await it with [Engine.Await].
func (e *Engine) SubmitPoSt(ctx context.Context, r PoStRequest) (JobID, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	req, free, err := postRequest(r)
	defer free()
	if err != nil {
		return 0, err
	}
	var id C.uint64_t
	var cerr C.cuzk_error
	if err := takeError(C.cuzk_post_submit(&req, &id, &cerr), &cerr); err != nil {
		return 0, err
	}
	return JobID(id), nil
}

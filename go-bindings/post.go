package cuzk

import (
	"context"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
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

// postRequest fills the raw request for r. The vanilla proofs travel beside it: raw copies them,
// and the array of their slices, into C memory for the call (cgo forbids Go pointers in memory
// passed to C) and frees them, once, whatever the outcome.
func postRequest(r PoStRequest) (raw.PostRequest, error) {
	req := raw.PostRequestDefault()
	if len(r.Randomness) != 32 {
		return req, &Error{Status: StatusInvalidArgument, Message: "randomness is not 32 bytes"}
	}
	req.RegisteredProof = int64(r.ProofType)
	req.Priority = r.Priority
	req.PartitionIndex = r.Partition
	req.ProverID = ProverID(r.MinerID)
	copy(req.Randomness[:], r.Randomness)
	req.Randomness[31] &= 0x3f
	return req, nil
}

// generatePoSt proves r on the global engine (started with defaults if none runs), blocking.
func generatePoSt(r PoStRequest) ([]byte, error) {
	req, err := postRequest(r)
	if err != nil {
		return nil, err
	}
	b, err := raw.GeneratePost(req, r.VanillaProofs)
	if err != nil {
		return nil, fromRaw(err)
	}
	return b, nil
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
	req, err := postRequest(r)
	if err != nil {
		return 0, err
	}
	id, err := raw.PostSubmit(req, r.VanillaProofs)
	if err != nil {
		return 0, fromRaw(err)
	}
	return JobID(id), nil
}

package cuzk

import (
	"context"
	"fmt"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/cuzk-project/cuzk/go-bindings/raw"
)

// FunctionsSectorUpdate holds the SnapDeals drop-ins, as filecoin-ffi's type of that name does.
type FunctionsSectorUpdate struct{}

// SectorUpdate is where filecoin-ffi's callers find the SnapDeals drop-ins
// (SectorUpdate.GenerateUpdateProofWithVanilla).
var SectorUpdate = FunctionsSectorUpdate{}

// UpdateRequest is one SnapDeals job for [Engine.SubmitUpdate]: a sector's update proof from
// its partition proofs.
type UpdateRequest struct {
	ProofType abi.RegisteredUpdateProof
	// OldSealedCID is the sector key's CommR, NewSealedCID the updated replica's, UnsealedCID
	// the new data's CommD (filecoin's commitment CIDs).
	OldSealedCID, NewSealedCID, UnsealedCID cid.Cid
	// VanillaProofs: one per partition, as filecoin-ffi's GenerateUpdateVanillaProofs returns
	// them.
	VanillaProofs [][]byte
	// Priority orders jobs within PoRep's class.
	Priority int32
}

// Multicodecs and multihashes of filecoin's commitment CIDs.
const (
	codecUnsealed  = cid.FilCommitmentUnsealed           // 0xf101
	codecSealed    = cid.FilCommitmentSealed             // 0xf102
	hashPieceSHA   = multihash.SHA2_256_TRUNC254_PADDED  // 0x1012
	hashSealedPose = multihash.POSEIDON_BLS12_381_A1_FC1 // 0xb401, "poseidon-bls12_381-a2-fc1"
)

// commitment is the 32-byte commitment inside c, a filecoin commitment CID of the given codec
// and multihash (InvalidArgument otherwise).
func commitment(c cid.Cid, codec, hash uint64, what string) ([32]byte, error) {
	var out [32]byte
	bad := func(why string) ([32]byte, error) {
		return out, &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("%s: %s", what, why)}
	}
	if !c.Defined() {
		return bad("no CID")
	}
	if c.Type() != codec {
		return bad(fmt.Sprintf("codec 0x%x, want 0x%x", c.Type(), codec))
	}
	mh, err := multihash.Decode(c.Hash())
	if err != nil {
		return bad(err.Error())
	}
	if mh.Code != hash || len(mh.Digest) != 32 {
		return bad(fmt.Sprintf("multihash 0x%x of %d bytes, want 0x%x of 32", mh.Code, len(mh.Digest), hash))
	}
	copy(out[:], mh.Digest)
	return out, nil
}

// updateRequest fills the raw request for r (the vanilla proofs travel beside it, as for PoSt).
func updateRequest(r UpdateRequest) (raw.UpdateRequest, error) {
	req := raw.UpdateRequestDefault()
	var err error
	if req.CommROld, err = commitment(r.OldSealedCID, codecSealed, hashSealedPose, "old sealed CID"); err != nil {
		return req, err
	}
	if req.CommRNew, err = commitment(r.NewSealedCID, codecSealed, hashSealedPose, "new sealed CID"); err != nil {
		return req, err
	}
	if req.CommDNew, err = commitment(r.UnsealedCID, codecUnsealed, hashPieceSHA, "unsealed CID"); err != nil {
		return req, err
	}
	req.RegisteredProof = int64(r.ProofType)
	req.Priority = r.Priority
	return req, nil
}

// GenerateUpdateProofWithVanilla is the drop-in for filecoin-ffi's: it proves a sector's update
// (SnapDeals, ProveReplicaUpdate2) from its partition proofs and returns filecoin-proofs' proof
// bytes (192 per partition), verified. It starts the engine with defaults if none runs, and
// blocks until done.
func (FunctionsSectorUpdate) GenerateUpdateProofWithVanilla(proofType abi.RegisteredUpdateProof,
	oldSealedCID, newSealedCID, unsealedCID cid.Cid, vanillaProofs [][]byte) ([]byte, error) {
	req, err := updateRequest(UpdateRequest{ProofType: proofType, OldSealedCID: oldSealedCID,
		NewSealedCID: newSealedCID, UnsealedCID: unsealedCID})
	if err != nil {
		return nil, err
	}
	b, err := raw.GenerateUpdate(req, vanillaProofs)
	if err != nil {
		return nil, fromRaw(err)
	}
	return b, nil
}

// SubmitUpdate validates a SnapDeals job and queues it; await it with [Engine.Await].
func (e *Engine) SubmitUpdate(ctx context.Context, r UpdateRequest) (JobID, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	req, err := updateRequest(r)
	if err != nil {
		return 0, err
	}
	id, err := raw.UpdateSubmit(req, r.VanillaProofs)
	if err != nil {
		return 0, fromRaw(err)
	}
	return JobID(id), nil
}

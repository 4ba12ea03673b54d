package cuzk

import (
	"context"
	"errors"
	"testing"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// testCID is a commitment CID of the given codec and multihash over 32 bytes of b.
func testCID(t *testing.T, codec, hash uint64, b byte) cid.Cid {
	t.Helper()
	d := make([]byte, 32)
	for i := range d {
		d[i] = b
	}
	d[31] &= 0x3f
	mh, err := multihash.Encode(d, hash)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(codec, mh)
}

// The SnapDeals drop-in takes filecoin's commitment CIDs and refuses others, and bad input,
// with the statuses filecoin-ffi's callers can act on, freeing the C copies of the vanilla
// proofs whatever the outcome. Valid update proofs through C are checked by tests/snap.rs,
// against filecoin-proofs' verifier.
func TestUpdateBadInputIsAClearError(t *testing.T) {
	sealed := testCID(t, codecSealed, hashSealedPose, 1)
	newSealed := testCID(t, codecSealed, hashSealedPose, 2)
	unsealed := testCID(t, codecUnsealed, hashPieceSHA, 3)
	garbage := [][]byte{{0xff, 0xff, 0xff}}
	p := abi.RegisteredUpdateProof_StackedDrg2KiBV1
	if got, err := commitment(sealed, codecSealed, hashSealedPose, "x"); err != nil || got[0] != 1 || got[31] != 1 {
		t.Fatalf("the commitment inside a sealed CID: %x %v", got, err)
	}
	if _, err := SectorUpdate.GenerateUpdateProofWithVanilla(p, sealed, newSealed, unsealed, garbage); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("garbage vanilla proofs: %v", err)
	}
	if _, err := SectorUpdate.GenerateUpdateProofWithVanilla(p, unsealed, newSealed, unsealed, garbage); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an unsealed CID for the old sealed one: %v", err)
	}
	if _, err := SectorUpdate.GenerateUpdateProofWithVanilla(p, sealed, newSealed, cid.Undef, garbage); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no unsealed CID: %v", err)
	}
	if _, err := SectorUpdate.GenerateUpdateProofWithVanilla(abi.RegisteredUpdateProof(99), sealed, newSealed, unsealed, garbage); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an unknown proof type: %v", err)
	}
	if _, err := engine.SubmitUpdate(context.Background(), UpdateRequest{ProofType: p, OldSealedCID: sealed,
		NewSealedCID: newSealed, UnsealedCID: unsealed, VanillaProofs: nil}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("SubmitUpdate without vanilla proofs: %v", err)
	}
}

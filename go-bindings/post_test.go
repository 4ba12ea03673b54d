package cuzk

import (
	"context"
	"errors"
	"testing"

	"github.com/filecoin-project/go-state-types/abi"
)

// The PoSt drop-ins refuse bad input with the statuses filecoin-ffi's callers can act on, and
// free the C copies of the vanilla proofs whatever the outcome (cgocheck2 and the race
// detector watch the passes). Valid PoSt proofs through C are checked by tests/post.rs,
// against filecoin-proofs' verifiers.
func TestPoStBadInputIsAClearError(t *testing.T) {
	r := make(abi.PoStRandomness, 32)
	garbage := [][]byte{{0xff, 0xff, 0xff}, make([]byte, 64)}
	window := abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
	winning := abi.RegisteredPoStProof_StackedDrgWinning2KiBV1
	if _, err := GenerateWindowPoStWithVanilla(window, testMiner, r, garbage); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("garbage vanilla proofs: %v", err)
	}
	if _, err := GenerateWindowPoStWithVanilla(window, testMiner, r, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("no vanilla proofs: %v", err)
	}
	if _, err := GenerateWinningPoStWithVanilla(abi.RegisteredPoStProof(99), testMiner, r, garbage); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an unknown proof type: %v", err)
	}
	if _, err := GenerateWindowPoStWithVanilla(window, testMiner, r[:8], garbage); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("short randomness: %v", err)
	}
	if _, err := GenerateSinglePartitionWindowPoStWithVanilla(winning, testMiner, r, garbage[:1], 0); !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a partition of a WinningPoSt: %v", err)
	}
	if _, err := engine.SubmitPoSt(context.Background(), PoStRequest{ProofType: window, MinerID: testMiner,
		Randomness: r, VanillaProofs: garbage, Partition: -1}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("SubmitPoSt of garbage: %v", err)
	}
}

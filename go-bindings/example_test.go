package cuzk_test

import (
	"fmt"
	"os"

	"github.com/filecoin-project/go-state-types/abi"

	cuzk "github.com/cuzk-project/cuzk/go-bindings"
)

// filecoin-ffi's signature; the drop-in must be assignable to it, so that a caller only
// changes its import.
var _ func(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) = cuzk.SealCommitPhase2

// Migrating from filecoin-ffi: replace the import
//
//	ffi "github.com/filecoin-project/filecoin-ffi"
//
// with
//
//	ffi "github.com/cuzk-project/cuzk/go-bindings"
//
// and the call stays as it was.
func ExampleSealCommitPhase2() {
	c1, err := os.ReadFile("commit-phase1-output.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	proof, err := cuzk.SealCommitPhase2(c1, abi.SectorNumber(1), abi.ActorID(1000))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes\n", len(proof))
}

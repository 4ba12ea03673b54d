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
//
// Here the C1 output is the test fixture, sector 1 of miner 1000 (`make fixtures` writes it;
// CUZK_TEST_C1 names another).
func ExampleSealCommitPhase2() {
	path := os.Getenv("CUZK_TEST_C1")
	if path == "" {
		path = "/var/tmp/filecoin-proof-parameters/cuzk-fixtures/2KiB.c1.json"
	}
	c1, err := os.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	proof, err := cuzk.SealCommitPhase2(c1, abi.SectorNumber(1), abi.ActorID(1000))
	if err != nil {
		fmt.Println(err)
		return
	}
	valid, err := cuzk.VerifySeal(c1, abi.SectorNumber(1), cuzk.ProverID(abi.ActorID(1000)), proof)
	fmt.Printf("%d bytes, valid: %v, error: %v\n", len(proof), valid, err)
	// Output: 192 bytes, valid: true, error: <nil>
}

package cuzk_test

import (
	"fmt"
	"os"

	"github.com/filecoin-project/go-state-types/abi"

	cuzk "github.com/cuzk-project/cuzk/go-bindings"
)

// TaskID stands for Curio's harmonytask.TaskID.
type TaskID int64

// sector is what a C2 task knows of its sector (Curio reads it from its database).
type sector struct {
	miner     abi.ActorID
	number    abi.SectorNumber
	proofType abi.RegisteredSealProof
	c1        []byte
}

// commit2Task has the shape of a Curio task (harmonytask.TaskInterface): CanAccept picks
// the first offered task this host can start now, by cuzk's admission call; Do proves it with
// the drop-in SealCommitPhase2 and checks it with filecoin-proofs' verify_seal.
type commit2Task struct {
	engine  *cuzk.Engine
	sectors map[TaskID]sector
}

func (t *commit2Task) CanAccept(ids []TaskID) (*TaskID, error) {
	for _, id := range ids {
		s := t.sectors[id]
		a, err := t.engine.Admission(s.proofType, cuzk.AdmissionOptions{})
		if err != nil {
			return nil, err // e.g. its parameters are missing on this host
		}
		if a.Admit {
			return &id, nil
		}
	}
	return nil, nil // none now: the scheduler offers them to another host or later
}

func (t *commit2Task) Do(id TaskID) (done bool, err error) {
	s := t.sectors[id]
	proof, err := cuzk.SealCommitPhase2(s.c1, s.number, s.miner)
	if err != nil {
		return false, err
	}
	ok, err := cuzk.VerifySeal(s.c1, s.number, cuzk.ProverID(s.miner), proof)
	if err != nil || !ok {
		return false, fmt.Errorf("proof of sector %d does not verify: %v", s.number, err)
	}
	fmt.Printf("task %d: sector %d proved, %d bytes\n", id, s.number, len(proof))
	return true, nil
}

// A Curio-shaped C2 task: the scheduler asks CanAccept, which answers from cuzk's admission
// call, then runs Do. The C1 output is the test fixture, sector 1 of miner 1000.
func ExampleEngine_Admission() {
	path := os.Getenv("CUZK_TEST_C1")
	if path == "" {
		path = "/var/tmp/filecoin-proof-parameters/cuzk-fixtures/2KiB.c1.json"
	}
	c1, err := os.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	engine, err := cuzk.Start(cuzk.Config{}) // the running engine, when one runs
	if err != nil {
		fmt.Println(err)
		return
	}
	task := &commit2Task{engine: engine, sectors: map[TaskID]sector{
		7: {miner: 1000, number: 1, proofType: abi.RegisteredSealProof_StackedDrg2KiBV1_1, c1: c1},
	}}
	id, err := task.CanAccept([]TaskID{7})
	if err != nil || id == nil {
		fmt.Println("not accepted:", err)
		return
	}
	fmt.Println("accepted task", *id)
	if _, err := task.Do(*id); err != nil {
		fmt.Println(err)
	}
	// Output:
	// accepted task 7
	// task 7: sector 1 proved, 192 bytes
}

// Command cuzk-commit2 proves a C1 output like `lotus-bench simple commit2`: it reads the C1
// output (raw SealCommitPhase1Output JSON or lotus-bench's Commit2In envelope), proves it
// with cuzk and writes the proof bytes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/filecoin-project/go-state-types/abi"

	cuzk "github.com/cuzk-project/cuzk/go-bindings"
)

func main() {
	sector := flag.Int64("sector", -1, "sector number (default: the envelope's SectorNum, else 1)")
	miner := flag.Uint64("miner", 1000, "miner actor id (t01000 by default, like lotus-bench)")
	out := flag.String("o", "", "output proof file (default: <input>.proof)")
	verify := flag.Bool("verify", true, "verify the proof with filecoin-proofs' verify_seal")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags] C1_FILE\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	in := flag.Arg(0)
	c1, err := os.ReadFile(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sn := *sector
	if sn < 0 {
		var env struct{ SectorNum *int64 }
		if json.Unmarshal(c1, &env) == nil && env.SectorNum != nil {
			sn = *env.SectorNum
		} else {
			sn = 1
		}
	}
	if *out == "" {
		*out = in + ".proof"
	}
	t0 := time.Now()
	proof, err := cuzk.SealCommitPhase2(c1, abi.SectorNumber(sn), abi.ActorID(*miner))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("proved sector %d of miner %d in %v: %d bytes\n", sn, *miner, time.Since(t0).Round(time.Millisecond), len(proof))
	if err := os.WriteFile(*out, proof, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *verify {
		ok, err := cuzk.VerifySeal(c1, abi.SectorNumber(sn), cuzk.ProverID(abi.ActorID(*miner)), proof)
		if err != nil || !ok {
			fmt.Fprintf(os.Stderr, "verify_seal: valid=%v err=%v\n", ok, err)
			os.Exit(1)
		}
		fmt.Println("verify_seal: valid")
	}
}

// Command cuzk-commit2 proves a C1 output like `lotus-bench simple commit2`: it reads the C1
// output (raw SealCommitPhase1Output JSON or lotus-bench's Commit2In envelope), proves it
// with cuzk, prints each partition's times (synthesis, wait for a prover, proof, device) and
// writes the proof bytes. With -dropin it proves through the drop-in SealCommitPhase2 (the
// process's global engine, as filecoin-ffi's callers get it) instead.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/filecoin-project/go-state-types/abi"

	cuzk "github.com/cuzk-project/cuzk/go-bindings"
)

func main() {
	sector := flag.Int64("sector", -1, "sector number (default: the envelope's SectorNum, else 1)")
	miner := flag.Uint64("miner", 1000, "miner actor id (t01000 by default, like lotus-bench)")
	out := flag.String("o", "", "output proof file (default: <input>.proof)")
	verify := flag.Bool("verify", true, "verify the proof with filecoin-proofs' verify_seal")
	dropin := flag.Bool("dropin", false, "prove through the drop-in SealCommitPhase2 (no timeline)")
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
	if *dropin {
		t0 := time.Now()
		proof, err := cuzk.SealCommitPhase2(c1, abi.SectorNumber(sn), abi.ActorID(*miner))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("proved sector %d of miner %d through SealCommitPhase2 in %v: %d bytes\n", sn, *miner,
			time.Since(t0).Round(time.Millisecond), len(proof))
		save(c1, sn, *miner, proof, *out, *verify)
		return
	}
	engine, err := cuzk.Start(cuzk.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer engine.Close()
	parts := map[uint32]*partition{}
	var mu sync.Mutex
	var job cuzk.JobID
	unregister, err := engine.OnTimeline(func(e cuzk.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Job != job || e.Partition == cuzk.NoPartition {
			return
		}
		p := parts[e.Partition]
		if p == nil {
			p = &partition{}
			parts[e.Partition] = p
		}
		switch e.Kind {
		case cuzk.SynthStart:
			p.synthStart = e.Since
		case cuzk.SynthEnd:
			p.synthEnd = e.Since
		case cuzk.GPUStart:
			p.proveStart = e.Since
		case cuzk.GPUEnd:
			p.proveEnd, p.device = e.Since, e.Detail
		}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t0 := time.Now()
	mu.Lock()
	job, err = engine.Submit(context.Background(), cuzk.Request{Phase1Output: c1,
		SectorNum: abi.SectorNumber(sn), ProverID: cuzk.ProverID(abi.ActorID(*miner))})
	mu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	proof, err := engine.Await(context.Background(), job)
	unregister() // every event of the job has been delivered
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("proved sector %d of miner %d in %v: %d bytes\n", sn, *miner, time.Since(t0).Round(time.Millisecond), len(proof))
	keys := make([]uint32, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	fmt.Println("partition  synthesis  wait    proof     device")
	for _, k := range keys {
		p := parts[k]
		fmt.Printf("%9d  %9v  %-6v  %-8v  %s\n", k, ms(p.synthEnd-p.synthStart), ms(p.proveStart-p.synthEnd),
			ms(p.proveEnd-p.proveStart), p.device)
	}
	save(c1, sn, *miner, proof, *out, *verify)
}

// save writes the proof to out and, where verify is set, checks it with verify_seal (exiting
// non-zero where that fails).
func save(c1 []byte, sn int64, miner uint64, proof []byte, out string, verify bool) {
	if err := os.WriteFile(out, proof, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if verify {
		ok, err := cuzk.VerifySeal(c1, abi.SectorNumber(sn), cuzk.ProverID(abi.ActorID(miner)), proof)
		if err != nil || !ok {
			fmt.Fprintf(os.Stderr, "verify_seal: valid=%v err=%v\n", ok, err)
			os.Exit(1)
		}
		fmt.Println("verify_seal: valid")
	}
}

// partition holds one partition's timeline times (since the engine started).
type partition struct {
	synthStart, synthEnd, proveStart, proveEnd time.Duration
	device                                     string
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

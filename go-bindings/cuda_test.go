//go:build cuzk_cuda

package cuzk

import (
	"context"
	"os"
	"strings"
	"testing"
)

// Built with -tags cuzk_cuda (the cuda library): the fixture is proved on the GPU where the
// machine has one (CUZK_EXPECT_GPU=1 requires it: the timeline must name a "cuda:" device for
// every partition) and on the CPU where it has no NVIDIA driver. The proof verifies either way.
func TestCudaBuildProvesOnTheGPUOrTheCPU(t *testing.T) {
	s, err := engine.Status()
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, d := range s.Devices {
		if strings.HasPrefix(d.Name, "cuda:") {
			gpus++
		}
	}
	expect := os.Getenv("CUZK_EXPECT_GPU") == "1"
	if expect && gpus == 0 {
		t.Fatalf("CUZK_EXPECT_GPU=1 but the engine has no GPU: devices %+v", s.Devices)
	}
	rec := &recorder{}
	unregister, err := engine.OnTimeline(rec.add)
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	ctx := context.Background()
	id, err := engine.Submit(ctx, Request{Phase1Output: fixture, SectorNum: testSector, ProverID: ProverID(testMiner)})
	if err != nil {
		t.Fatal(err)
	}
	proof, err := engine.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	unregister()
	verify(t, proof)
	devices := []string{}
	for _, e := range rec.forJob(id) {
		if e.Kind == GPUEnd {
			devices = append(devices, e.Detail)
		}
	}
	t.Logf("devices %d GPU(s); partitions proved on %v", gpus, devices)
	if len(devices) == 0 {
		t.Fatal("no GPU_END event")
	}
	for _, d := range devices {
		if gpus > 0 && !strings.HasPrefix(d, "cuda:") {
			t.Errorf("a partition was proved on %q with a GPU in service", d)
		}
		if gpus == 0 && d != "cpu" {
			t.Errorf("a partition was proved on %q without a GPU", d)
		}
	}
}

"""Another prover on the same GPU, for the device runs: holds the card's device
memory, all but LEAVE_GIB of what is free, for SECONDS, then lets it go.

    python3 scripts/gpu-cotenant.py LEAVE_GIB SECONDS
"""
import sys
import time

import torch

leave = int(float(sys.argv[1]) * 2**30)
seconds = float(sys.argv[2])
free, total = torch.cuda.mem_get_info()
want = max(0, free - leave)
held, chunk = [], 1 << 30
while sum(t.numel() for t in held) + chunk <= want:
    try:
        held.append(torch.ones(chunk, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        break
torch.cuda.synchronize()
got = sum(t.numel() for t in held)
print(f"co-tenant {time.strftime('%T')}: holding {got >> 20} MiB of {total >> 20} "
      f"(free was {free >> 20}) for {seconds:.0f} s", flush=True)
time.sleep(seconds)
held.clear()
torch.cuda.empty_cache()
print(f"co-tenant {time.strftime('%T')}: released", flush=True)

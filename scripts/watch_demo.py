"""Two tiny PyTorch training loops for `cudafit watch` on a machine with an NVIDIA GPU (issue 30):

    cudafit watch -- python scripts/watch_demo.py healthy
    cudafit watch -- python scripts/watch_demo.py input-bound

`healthy` keeps the GPU busy with data already on it; `input-bound` builds each batch on the CPU in
the main process (no DataLoader workers, a slow per-sample transform), so the GPU waits. Each runs
for --seconds (default 60). Needs torch with CUDA; exits 2 without a GPU."""

from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["healthy", "input-bound"])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU visible to torch", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = 2048
    x_gpu = torch.randn(batch, 4096, device=device)
    end = time.monotonic() + args.seconds
    steps = 0
    while time.monotonic() < end:
        if args.mode == "healthy":
            x = x_gpu
        else:
            # one sample at a time on the CPU, as a slow decode or augmentation would
            rows = [torch.randn(4096).mul_(0.5).add_(torch.randn(4096)).tanh_() for _ in range(batch)]
            x = torch.stack(rows).to(device)
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
    torch.cuda.synchronize()
    print(f"{args.mode}: {steps} steps in {args.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

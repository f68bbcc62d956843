"""examples/torch_tensors.py: plume from Python on torch tensors, through DLPack.

    PYTHONPATH=<plume>/python python3 examples/torch_tensors.py

torch tensors go into plume as they are (plume reads them through the DLPack protocol,
without a copy), and plume's results come back as torch tensors without a copy either:
with as_tensor=True an op or a pipeline returns a plume.Tensor, which torch.from_dlpack
takes over in place. The program shows both, and checks the results against torch's own:
  1. plume.ops.threshold on a torch tensor, the mask handed to torch;
  2. a pipeline (a Gaussian matched filter, then a threshold) run on a torch frame.

torch is optional for plume: without it this program says so and exits with status 77
(the tests' "skipped"). Debian's python3-torch (torch 1.13, CPU only) is enough. With a
CPU-only torch the program uses plume's host backend (torch could not take CUDA memory);
with a CUDA torch, plume's default backend. Exit status 1 if anything differs from torch.
"""

import sys

try:
    import torch
except ImportError:
    print("skipped: torch is not installed for %s (Debian: python3-torch)" % sys.executable)
    sys.exit(77)

import plume


def main():
    # plume's context on the device torch can read: host memory for a CPU-only torch.
    gpu = torch.cuda.is_available()
    context = plume.default_context() if gpu else plume.Context("host")
    device = "cuda" if context.backend == "cuda" else "cpu"
    print("plume %s on %s, torch %s on %s" % (plume.version(), context.backend,
                                              torch.__version__, device))
    ok = True

    # A frame as torch makes it: f32 (torch has no u16), a background of 1000 with one
    # bright 3 x 3 spot centred on (20, 30).
    frame = torch.full((48, 64), 1000.0, dtype=torch.float32, device=device)
    frame[19:22, 29:32] = 1600.0

    # 1. threshold on a torch tensor; the mask comes back as a torch tensor on the same
    # memory plume wrote (the data pointers are equal: no copy).
    result = plume.ops.threshold(frame, value=1300.0, context=context, as_tensor=True)
    mask = torch.from_dlpack(result)
    same = torch.equal(mask.bool(), frame > 1300.0)
    print("threshold: torch %s %s on %s, equal to torch's frame > 1300: %s"
          % (mask.dtype, tuple(mask.shape), mask.device.type, same))
    ok &= same
    if context.backend == "host":
        shared = mask.data_ptr() == result.numpy().ctypes.data
        print("the mask is plume's memory, not a copy: %s" % shared)
        ok &= shared

    # 2. A pipeline on a torch frame: a 5 x 5 Gaussian (sigma 1) gathers the spot, the
    # threshold keeps it. Both outputs stay torch tensors.
    text = "conv2d kernel=gauss:5:1 pad=same border=replicate ! threshold value=1200"
    with plume.Pipeline(text, dtype="f32", shape=tuple(frame.shape),
                        context=context) as pipeline:
        spot = torch.from_dlpack(pipeline.run(frame, as_tensor=True))
    rows, cols = torch.nonzero(spot, as_tuple=True)
    centre = (rows.double().mean().item(), cols.double().mean().item())
    print("pipeline: %d pixels kept, centred on (%.1f, %.1f)" % (len(rows), *centre))
    ok &= len(rows) > 0 and centre == (20.0, 30.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

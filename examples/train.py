"""An elastic DDP training script written the torchrun way; telastic runs it unmodified.

    torchrun --nnodes 1:2 --nproc-per-node 2 ... examples/train.py --steps 200
    telastic run --nnodes 1:2 --nproc-per-node 2 ... examples/train.py --steps 200
    python examples/train.py --steps 200          # one process, no launcher (the reference)

A small MLP learns a fixed random regression task generated here (no download). Rank 0 writes
an atomic checkpoint (model, optimizer, step, sampler position) every --ckpt-every steps into
TELASTIC_CHECKPOINT_DIR (or --ckpt-dir), and every run resumes from TELASTIC_RESUME_FROM when
the launcher found one, else from the newest complete checkpoint in that directory — so the
same script also resumes under torchrun.

World size may change between checkpoint and resume. The GLOBAL batch size stays fixed
(--global-batch); each rank takes global_batch / world_size samples per step, and DDP averages
gradients across ranks, so every step sees the same samples and the same averaged gradient
whatever the world size: the learning rate is therefore left unchanged (no linear scaling).
The sampler position is stored as the global step, which does not depend on the world size.

Preemption: on SIGUSR1 (what telastic sends every worker when a node is drained with
--checkpoint-first, or its agent gets SIGTERM) the script checkpoints within --signal-check-every
steps (5). Every rank all-reduces a flag that often, so all ranks agree on the step however the
signals interleave.
"""
import argparse
import glob
import json
import os
import signal
import time

# Preemption: SIGUSR1 asks for a checkpoint at the next step. Installed before torch loads (a few
# seconds): until a handler exists, SIGUSR1 kills the process.
ASKED = []
signal.signal(signal.SIGUSR1, lambda *_: ASKED.append(1))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--global-batch", type=int, default=48)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--samples", type=int, default=4800)
    p.add_argument("--ckpt-every", type=int, default=20)
    p.add_argument("--ckpt-dir", default=os.environ.get("TELASTIC_CHECKPOINT_DIR", "checkpoints"))
    p.add_argument("--step-time", type=float, default=0.0, help="extra seconds per step (to watch it)")
    p.add_argument("--progress", help="rank 0 appends 'step world_size unix_time' lines here")
    p.add_argument("--final", help="rank 0 writes the final weights here as JSON")
    p.add_argument("--stall-in-checkpoint", type=int, default=-1, metavar="STEP",
                   help="fault injection for tests: at STEP, rank 0 writes half a checkpoint under "
                        "its final name and hangs, as a node that dies mid-write leaves it")
    p.add_argument("--signal-check-every", type=int, default=5, metavar="STEPS",
                   help="how often the ranks agree on whether a checkpoint was asked for (SIGUSR1)")
    p.add_argument("--hold-while", metavar="PATH",
                   help="for tests: before each step, wait while PATH exists (a test holds training "
                        "at a known step while it changes the job's membership)")
    p.add_argument("--ignore-checkpoint-signal", action="store_true",
                   help="for tests: ignore SIGUSR1, as a script without a preemption handler would")
    return p.parse_args()


def make_data(n):
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 1, generator=g)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))


def load_checkpoint(directory):
    """Newest checkpoint that loads (TELASTIC_RESUME_FROM first: telastic already skipped
    partial and corrupt ones); under torchrun, the newest ckpt_<step>.pt that loads."""
    given = os.environ.get("TELASTIC_RESUME_FROM")
    candidates = [given] if given else sorted(glob.glob(os.path.join(directory, "ckpt_*.pt")), reverse=True)
    for path in candidates:
        try:
            return path, torch.load(path, map_location="cpu")
        except Exception as err:  # a partial file left by a node that died mid-write
            if given:
                raise
            print(f"skipping unreadable checkpoint {path}: {err}", flush=True)
    return None, None


def save_checkpoint(directory, step, model, opt, world_size, stall=False):
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, f"ckpt_{step:08d}.pt")
    tmp = final + ".tmp"
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "world_size": world_size}
    if stall:
        import io
        buf = io.BytesIO()
        torch.save(state, buf)
        with open(final, "wb") as f:
            f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
        print(f"stalling in the checkpoint of step {step}", flush=True)
        time.sleep(3600)
    torch.save(state, tmp)
    os.replace(tmp, final)  # readers never see a partial file under the final name


def main():
    args = parse_args()
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo")  # MASTER_ADDR/PORT, RANK, WORLD_SIZE from the launcher
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    if args.global_batch % world:
        raise SystemExit(f"--global-batch {args.global_batch} is not divisible by world size {world}")
    local_batch = args.global_batch // world

    data = make_data(args.samples)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0
    resume, state = load_checkpoint(args.ckpt_dir)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = state["step"]
        if rank == 0:
            print(f"resumed from {resume} at step {step} (saved at world size {state['world_size']}, now {world})", flush=True)
    ddp = DDP(model) if distributed else model

    if args.ignore_checkpoint_signal:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)

    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=7, drop_last=True)
    steps_per_epoch = args.samples // args.global_batch
    loss_fn = nn.MSELoss()
    while step < args.steps:
        epoch, skip = divmod(step, steps_per_epoch)
        sampler.set_epoch(epoch)
        indices = list(iter(sampler))[skip * local_batch:]  # the sampler position after a resume
        loader = DataLoader(torch.utils.data.Subset(data, indices), batch_size=local_batch, shuffle=False)
        for x, y in loader:
            while args.hold_while and os.path.exists(args.hold_while):
                time.sleep(0.05)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            step += 1
            # Any rank asked → every rank saves at this same step (a collective save would need it).
            # Every --signal-check-every steps: the all-reduce costs ~25% of a step of this tiny model.
            save_now = False
            if step % args.signal_check_every == 0:
                flag = torch.tensor([float(bool(ASKED))])
                if distributed:
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                save_now = flag.item() > 0
                if save_now:
                    ASKED.clear()
            if rank == 0:
                if step % 10 == 0 or step == args.steps:
                    print(f"step {step} loss {loss.item():.5f} world_size {world}", flush=True)
                if args.progress:
                    with open(args.progress, "a") as f:
                        f.write(f"{step} {world} {time.time():.3f}\n")
                if save_now and step % args.ckpt_every != 0:
                    print(f"checkpoint at step {step}: asked by the launcher", flush=True)
                    save_checkpoint(args.ckpt_dir, step, model, opt, world)
                if step % args.ckpt_every == 0:
                    stall = step == args.stall_in_checkpoint and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
                    save_checkpoint(args.ckpt_dir, step, model, opt, world, stall=stall)
            if args.step_time:
                time.sleep(args.step_time)
            if step >= args.steps:
                break

    if rank == 0 and args.final:
        weights = [p.detach().flatten().tolist() for p in model.parameters()]
        with open(args.final, "w") as f:
            json.dump({"step": step, "world_size": world, "weights": weights}, f)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

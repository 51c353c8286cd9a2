"""peer:torch and peer:torch-w2: the scenario's pipeline written the way a
PyTorch user writes it: a map-style Dataset whose __getitem__ returns one
transformed element as tensors, a batch sampler that yields the exported order,
the default collate, and DataLoader(num_workers=0 or 2).

It computes what sluice computes, not torchvision's idiom: Normalize would be
(x - mean) / std, which rounds differently from sluice's (x - mean) * inv_std
with inv_std = float32(1 / std), so the Dataset multiplies by inv_std. clip is
two comparisons (torch.where), so NaN passes through as in sluice.
"""
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_peer  # noqa: E402

SUPPORTED = {"pack_tokens", "normalize", "scale", "clip", "add", "multiply", "random_crop", "random_hflip"}


class ExportedDataset(Dataset):
    """Element (epoch, id) of the exported data set, with its transforms."""

    def __init__(self, plan):
        self.plan = plan
        self.sources = {f["name"]: torch.from_numpy(plan.load_source(f["name"])) for f in plan.source_fields}
        self.ops = plan.ops
        self.decisions = {}
        for op in self.ops:
            if op["kind"] in ("random_crop", "random_hflip"):
                for e in range(plan.raw["epochs"]):
                    self.decisions[(op["index"], e)] = torch.from_numpy(plan.decisions(op, e))

    def __len__(self):
        return self.plan.raw["dataset_size"]

    def __getitem__(self, key):
        epoch, i = key
        out = {}
        ops = self.ops
        if ops and ops[0]["kind"] == "pack_tokens":
            p, name = ops[0]["params"], ops[0]["field"]
            stream = self.sources[name]
            seq = stream[i * p["seq_len"]:(i + 1) * p["seq_len"]]
            if seq.shape[0] < p["seq_len"]:
                seq = torch.cat([seq, torch.full((p["seq_len"] - seq.shape[0],), p["pad_id"], dtype=torch.int32)])
            out[name] = seq
            ops = ops[1:]
        for name, data in self.sources.items():
            if name not in out:
                out[name] = data[i]
        for op in ops:
            kind, p, name = op["kind"], op["params"], op["field"]
            x = out[name]
            if kind == "normalize":
                mean = torch.tensor(p["mean"], dtype=torch.float32)
                inv_std = torch.tensor(p["inv_std"], dtype=torch.float32)
                x = (x.to(torch.float32) - mean) * inv_std
            elif kind in ("scale", "multiply"):
                x = x * torch.tensor(p["value"], dtype=torch.float32)
            elif kind == "add":
                x = x + torch.tensor(p["value"], dtype=torch.float32)
            elif kind == "clip":
                lo = torch.tensor(p["lo"], dtype=torch.float32)
                hi = torch.tensor(p["hi"], dtype=torch.float32)
                x = torch.where(x < lo, lo, torch.where(x > hi, hi, x))
            elif kind == "random_crop":
                oy, ox = (int(v) for v in self.decisions[(op["index"], epoch)][i])
                h, w, ch, cw = x.shape[0], x.shape[1], p["crop_h"], p["crop_w"]
                top, left = (h - ch) // 2, (w - cw) // 2
                y = torch.zeros_like(x)
                y[top:top + ch, left:left + cw] = x[oy:oy + ch, ox:ox + cw]
                x = y
            elif kind == "random_hflip":
                if int(self.decisions[(op["index"], epoch)][i][0]):
                    x = torch.flip(x, dims=[1])
            out[name] = x
        return out


class ExportedOrder(Sampler):
    """The exported batches: each a list of (epoch, element id)."""

    def __init__(self, plan):
        self.plan = plan

    def __iter__(self):
        for i, b in enumerate(self.plan.batches):
            yield [(b["epoch"], int(e)) for e in self.plan.batch_ids(i)]

    def __len__(self):
        return len(self.plan.batches)


def make_batches(plan, options):
    loader = DataLoader(ExportedDataset(plan), batch_sampler=ExportedOrder(plan), num_workers=options.workers)
    for batch in loader:
        # Tensors on the CPU share their memory with numpy: no copy.
        yield {k: v.numpy() for k, v in batch.items()}


if __name__ == "__main__":
    torch.set_num_threads(1)
    sluice_peer.main("torch", "torch " + torch.__version__, make_batches, SUPPORTED)

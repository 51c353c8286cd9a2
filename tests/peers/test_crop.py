"""peer:numpy's and peer:torch's random_crop with the random_hflip after it
(both reverse the flipped crops in one call for the whole batch) against
the ops' definition written out per image: each image's crop at its
offset, placed centred in zeros of the image's size (the margin's odd
column on the right and bottom), then the whole padded image mirrored when
it is flipped. The corpus's crops (7/8 of a side) all leave even margins,
so this is where the odd margins, where a flipped crop lands one column off
the unflipped one, are checked; and crops of a batch (not the source) and
2-D images too.

    python3 tests/peers/test_crop.py numpy|torch    (exit 77: the framework is missing)
"""

import os
import sys

PEER = sys.argv[1] if len(sys.argv) > 1 else "torch"
try:
    import numpy as np

    if PEER == "torch":
        import torch
except ImportError as e:
    print("skip: %s (ci/install-peers.sh %s installs it)" % (e, PEER))
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "peers"))
if PEER == "torch":
    import torch_peer
else:
    import numpy_peer


class Decisions:
    """The two ops' exported decisions for one epoch, as Plan.decisions gives them."""

    def __init__(self, offsets, flips):
        self.table = {0: offsets, 1: flips}

    def decisions(self, op, epoch):
        return self.table[op["index"]]


def expected(source, ids, rows, offsets, flips, ch, cw):
    """The definition, one image at a time."""
    h, w = source.shape[1], source.shape[2]
    top, left = (h - ch) // 2, (w - cw) // 2
    out = np.zeros((len(ids),) + source.shape[1:], dtype=source.dtype)
    for k, (i, row) in enumerate(zip(ids, rows)):
        oy, ox = offsets[i]
        out[k, top : top + ch, left : left + cw] = source[row, oy : oy + ch, ox : ox + cw]
        if flips[i, 0]:
            out[k] = out[k, :, ::-1].copy()
    return out


def check(shape, ch, cw, flip_pattern, from_source, dtype, rng):
    n_source, n = shape[0], 9
    source = rng.integers(1, 200, size=shape).astype(dtype)
    ids = rng.permutation(n_source)[:n]
    offsets = np.stack(
        [rng.integers(0, shape[1] - ch + 1, n_source), rng.integers(0, shape[2] - cw + 1, n_source)], axis=1
    ).astype(np.int32)
    flips = {"none": np.zeros(n_source), "all": np.ones(n_source), "mixed": rng.integers(0, 2, n_source)}[flip_pattern]
    flips = flips.astype(np.uint8)[:, None]
    crop_op = {"index": 0, "params": {"crop_h": ch, "crop_w": cw}}
    flip_op = {"index": 1}
    # A batch's rows (from_source False) are the batch's own images, in its order.
    x = source if from_source else source[ids]
    rows = ids if from_source else np.arange(n)
    if PEER == "torch":
        peer = torch_peer.BatchedExport.__new__(torch_peer.BatchedExport)
        peer.buffers, peer.tiles, peer.decisions = {}, {}, {}
    else:
        peer = numpy_peer.Ops.__new__(numpy_peer.Ops)
        peer.made_columns = {}
        field = numpy_peer.Field(x)
    peer.plan = Decisions(offsets, flips)
    for batch in range(2):  # the second batch reuses the first one's buffers
        # Each batch its own epoch: the torch peer keeps an epoch's decisions.
        if PEER == "torch":
            tensor, ids_t = torch.from_numpy(x), torch.from_numpy(ids)
            got = peer.crop("image", tensor, crop_op, flip_op, ids_t, batch, from_source).numpy()
        else:
            got = peer.crop(field, x, crop_op, flip_op, ids, rows, batch)
        want = expected(x, ids, rows, offsets, flips, ch, cw)
        if got.tobytes() != want.tobytes():
            raise SystemExit(
                "%s_peer crop differs: shape %s crop %dx%d flips %s from_source %s dtype %s batch %d"
                % (PEER, shape, ch, cw, flip_pattern, from_source, dtype.__name__, batch)
            )
        flips = 1 - flips  # the next batch flips the others: stale columns must not stay
        peer.plan = Decisions(offsets, flips)


def main():
    rng = np.random.default_rng(7)
    cases = 0
    for shape, ch, cw in (
        ((20, 16, 16, 3), 14, 14),  # even margins (the corpus's)
        ((20, 16, 17, 3), 14, 14),  # an odd margin in width: the flip moves the content
        ((20, 17, 16, 3), 14, 15),  # odd in height, odd in width the other way
        ((20, 12, 13), 9, 10),  # 2-D images, one value a pixel
    ):
        for flip_pattern in ("none", "all", "mixed"):
            for from_source in (True, False):
                for dtype in (np.uint8, np.float32):
                    check(shape, ch, cw, flip_pattern, from_source, dtype, rng)
                    cases += 1
    print("ok: %s_peer, %d cases, bitwise" % (PEER, cases))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a sluice history's runs as Weights & Biases offline runs.

usage: .venv-wandb/bin/python ci/history-wandb.py HISTORY_DIR [--project NAME] [--dir OUT]

One W&B run per history run (machine and commit), grouped by machine, with
the commit, its position and the machine's fingerprint as its config, and
per row (profile/scenario/variant/adapter) three values logged at step =
the commit's position: elements_per_s (at the median batch time) and the
ends of its 95% interval, elements_per_s_low and elements_per_s_high. The
runs are written offline under OUT (default ./wandb); nothing is sent.
Sync them with `wandb sync OUT/offline-run-*`. It reads the run files
documented in docs/history.md and needs only the pinned wandb that
ci/install-wandb.sh installs; no test of the default suite runs it.
"""

import argparse
import glob
import json
import os
import sys


def runs(history):
    for path in sorted(glob.glob(os.path.join(history, "machines", "*", "runs", "*.json"))):
        if ".tmp." in os.path.basename(path):
            continue
        with open(path) as f:
            run = json.load(f)
        if run.get("format") != "sluice-history-run" or run.get("version") != 1:
            sys.exit(f"{path}: not a sluice history run of version 1")
        yield path, run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("history")
    parser.add_argument("--project", default="sluice-history")
    parser.add_argument("--dir", default=".")
    args = parser.parse_args()
    os.environ["WANDB_MODE"] = "offline"
    import wandb

    written = 0
    for _path, run in runs(args.history):
        env = run["environment"]
        config = {
            "commit": run["commit"],
            "position": run["position"],
            "commit_time": run["commit_time"],
            "machine": run["machine"],
            "cpu_model": env["cpu_model"],
            "cpu_cores": env["cpu_cores"],
            "kernel": env["kernel"],
            "compiler": env["compiler"],
        }
        values = {}
        for row in run["rows"]:
            if not row["measured"]:
                continue
            name = "/".join([row["profile"], row["scenario"], row["variant"], row["adapter"]])
            per_batch = row["elements_per_batch"] * 1e9
            values[name + "/elements_per_s"] = per_batch / row["median_ns"]
            values[name + "/elements_per_s_low"] = per_batch / row["high_ns"]
            values[name + "/elements_per_s_high"] = per_batch / row["low_ns"]
        w = wandb.init(
            project=args.project,
            dir=args.dir,
            mode="offline",
            group=run["machine"],
            name=f"{run['position']}-{run['commit']}",
            job_type="sluice-bench",
            config=config,
            reinit=True,
        )
        w.log(values, step=run["position"])
        w.finish()
        written += 1
    print(f"wrote {written} offline runs under {os.path.join(args.dir, 'wandb')}; sync them with `wandb sync`")


if __name__ == "__main__":
    main()

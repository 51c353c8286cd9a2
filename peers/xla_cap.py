"""Whether XLA may contract a multiply and an add of a plan into one fused
multiply-add, which rounds once where sluice rounds twice: the JAX peers cap
XLA's x86 code at AVX (the level before FMA instructions) only for such
plans, since the cap also costs AVX2's other instructions (docs/peers.md).

XLA reads XLA_FLAGS when its backend starts (the first computation), not
when jax is imported, and the plan comes after the peer's hello (protocol 3):
so the peer imports jax, says hello, and applies the cap to the plan it
receives before anything of jax runs."""

import os

# Ops whose own arithmetic has a product feeding a sum (polynomials,
# blends, weighted sums, moments).
INTERNAL = {
    "log1p",
    "mixup",
    "cutmix",
    "zscore",
    "affine",
    "resize",
    "random_resized_crop",
    "log_mel",
    "trig_rounds",
    "branch_mean",
    "random_apply",
    "random_choice",
    "random_brightness",
    "random_scale",
    "gaussian_noise",
}
# Ops whose last float operation is a multiply, and ops whose first is an
# add or subtract: the first followed by the second on the same field is a
# pattern XLA contracts.
ENDS_IN_MULTIPLY = {"normalize", "scale", "multiply", "random_scale", "dropout"}
STARTS_WITH_ADD = {"normalize", "add", "random_brightness", "gaussian_noise"}


def contraction(plan_raw):
    """The reason XLA could fuse a multiply and an add of this plan, or None."""
    last = {}
    for op in plan_raw["ops"]:
        kind, field = op["kind"], op["field"]
        if kind in INTERNAL:
            return "%s multiplies then adds" % kind
        if kind in STARTS_WITH_ADD and last.get(field) in ENDS_IN_MULTIPLY:
            return "%s's multiply then %s's add" % (last[field], kind)
        last[field] = kind
    return None


# What the peers' framework strings say, at their hello, before the plan.
POLICY = "XLA capped at AVX where a plan could contract"


def apply(plan_raw):
    """Caps XLA at AVX when the plan needs it, before XLA's backend starts
    (after it the flag would be ignored and the peer's floats could differ);
    returns what was decided, for the peer's log."""
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        raise SystemExit("xla_cap.apply: XLA's backend started before the plan came; its cap cannot apply any more")
    why = contraction(plan_raw)
    if why is None:
        return "XLA not capped: nothing to contract"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_max_isa=AVX").strip()
    return "XLA capped at AVX: " + why

"""sluice's own definitions of the ops whose arithmetic no framework has a
matching function for, written once over a small array interface so that the
numpy, torch and JAX peers compute them operation for operation as sluice
does (and so bitwise):

- log1p: sluice's libm-free log1p (sl__log1p_f32 in kernels/ref/ref.h); each
  framework's own log1p rounds differently, and the protocol compares bits;
- the id hash of hash_ids: the high 32 bits of SplitMix64's first output
  seeded with the id, that is the golden gamma added, then the finalizer
  (sl_mix64 in include/sluice/core/philox.h);
- dropout's keyed mask: Philox4x32-10 (include/sluice/core/philox.h) keyed by
  the plan's seed and the op id, one block of four words per four values;
- trig_rounds: y = sin y + cos y, rounds times, in float64, by sluice's
  libm-free sl_det_sincos_turns (include/sluice/core/detmath.h): libm's sin and
  cos differ between C libraries, numpy's and torch's among them;
- bilinear resize (resize, random_resized_crop): the plan of one axis,
  half-pixel centres in exact integers and a weight by one float32 division
  (sl__body_resize_axis in kernels/bodies.h), and the lerps of four source
  values in sluice's order (sl__body_bilinear); a framework's own resize
  (torchvision, tf.image, jax.image) weighs and rounds differently.
- log_mel's definition (engine/ops/melspec_consts.c, kernels/ref/ref.h):
  its frame count, periodic Hann window, HTK mel filter bank and Whisper's
  log constants, in plain Python; each framework then does the FFT and the
  products its own way, held to MM-2's stated tolerance, not to the bit.

An array interface `A` provides: f32(python float) -> a float32 scalar;
where(cond, a, b); bits(x) -> x's float32 bits as int32; from_bits(i) -> the
float32 with int32 bits i; shr(i, n) and band(i, m): i >> n and i & m on
those int32 bits; to_f32(int array) -> float32 values; fence(x) -> x,
a point a compiler may not fuse or reorder arithmetic across (identity
outside XLA); rint(x) (ties to even) and floor(x), exact. Plain Python
operators do the arithmetic, each in float32 (float64 in trig_rounds) and
rounded once per operation, as sluice's kernels are compiled
(-ffp-contract=off: no fused multiply-add).
"""

import math

LOG1P_NEAR_HI = float.fromhex("0x1.a827a0p-2")
LOG1P_NEAR_LO = -float.fromhex("0x1.2bec32p-2")
LG1, LG2 = float.fromhex("0x1.555554p-1"), float.fromhex("0x1.999c26p-2")
LG3, LG4 = float.fromhex("0x1.23d3dcp-2"), float.fromhex("0x1.f13c4cp-3")
LN2_HI, LN2_LO = float.fromhex("0x1.62e300p-1"), float.fromhex("0x1.2fefa2p-17")


def log1p(x, A):
    """log(1 + x) of float32 x, as sluice computes it."""
    F, fence = A.f32, A.fence
    one = F(1.0)
    u = fence(one + x)
    bits = A.bits(u)
    k = A.shr(bits, 23) - 127
    mant = A.band(bits, 0x7FFFFF)
    halve = mant >= 0x3504F4  # m >= sqrt(2): take m / 2 and k + 1
    m = A.from_bits(mant + A.where(halve, 0x3F000000, 0x3F800000))  # mant has none of those bits
    k = k + A.where(halve, 1, 0)
    # The rounding error of 1 + x, exactly, by Knuth's TwoSum.
    x_part = fence(u - one)
    c_far = fence(fence(fence(one - fence(u - x_part)) + fence(x - x_part)) / u)
    near = (x < F(LOG1P_NEAR_HI)) & (x >= F(LOG1P_NEAR_LO))
    dk = A.to_f32(A.where(near, 0, k))
    f = A.where(near, x, fence(m - one))
    c = A.where(near, F(0.0), c_far)
    hfsq = fence(fence(F(0.5) * f) * f)
    s = fence(f / fence(F(2.0) + f))
    z = fence(s * s)
    w = fence(z * z)
    t1 = fence(w * fence(F(LG2) + fence(w * F(LG4))))
    t2 = fence(z * fence(F(LG1) + fence(w * F(LG3))))
    inner = fence(s * fence(hfsq + fence(t2 + t1)))
    tail = fence(fence(dk * F(LN2_LO)) + c)
    r = fence(fence(dk * F(LN2_HI)) - fence(fence(hfsq - fence(inner + tail)) - f))
    # Zeros keep their sign; then infinity, -1, the outside of the domain and NaN.
    r = A.where(x == F(0.0), x, r)
    r = A.where(x == F(float("inf")), x, r)
    r = A.where(x == F(-1.0), F(float("-inf")), r)
    r = A.where(x < F(-1.0), F(float("nan")), r)
    return A.where(x != x, x, r)


MIX_ADD = 0x9E3779B97F4A7C15
MIX_MUL1 = 0xBF58476D1CE4E5B9
MIX_MUL2 = 0x94D049BB133111EB


def signed64(v):
    """A 64-bit constant as the int64 with the same bits (frameworks without
    uint64 multiply int64s, which wrap the same way)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def id_hash_high32(v, shr, const):
    """The high 32 bits of SplitMix64's first output seeded with each of the
    64-bit ids v (the gamma MIX_ADD added, then the finalizer; uint64, or
    int64 wrapping alike): shr(v, n) shifts right logically by n, const(c)
    makes v's type of a 64-bit constant."""
    v = v + const(MIX_ADD)
    v = (v ^ shr(v, 30)) * const(MIX_MUL1)
    v = (v ^ shr(v, 27)) * const(MIX_MUL2)
    return shr(v ^ shr(v, 31), 32)


TWO_PI = 6.283185307179586476925286766559  # SL_DET_TWO_PI, the same double
INV_TWO_PI = 1.0 / TWO_PI  # C folds 1.0 / SL_DET_TWO_PI, correctly rounded, as Python divides
# sl_det_sincos_turns' Taylor coefficients in its Horner order, highest
# first: 1/3!, -1/5!, ... to 1/19! for the sine and 1/2!, ... to 1/18! for
# the cosine, alternating. Each is the C source's double division, which
# Python's division rounds identically.
SIN_COEFFS = (
    -1.0 / 121645100408832000.0,
    1.0 / 355687428096000.0,
    -1.0 / 1307674368000.0,
    1.0 / 6227020800.0,
    -1.0 / 39916800.0,
    1.0 / 362880.0,
    -1.0 / 5040.0,
    1.0 / 120.0,
    -1.0 / 6.0,
)
COS_COEFFS = (
    -1.0 / 6402373705728000.0,
    1.0 / 20922789888000.0,
    -1.0 / 87178291200.0,
    1.0 / 479001600.0,
    -1.0 / 3628800.0,
    1.0 / 40320.0,
    -1.0 / 720.0,
    1.0 / 24.0,
    -0.5,
)


def trig_rounds(y, rounds, A):
    """rounds times y = sin y + cos y of float64 y, as sl__ref_trig_rounds
    computes it (the caller widens float32 to float64 before and narrows
    after): the nearest quarter turn q leaves r in [-1/8, 1/8] turns, whose
    sine and cosine are the Taylor polynomials; q mod 4 picks and signs
    them. Every step is one float64 + - * or an exact rint or floor."""
    for _ in range(rounds):
        turns = y * INV_TWO_PI
        q = A.rint(turns * 4.0)
        r = turns - q * 0.25
        quadrant = q - 4.0 * A.floor(q * 0.25)
        x = TWO_PI * r
        x2 = x * x
        ps = SIN_COEFFS[0]
        for c in SIN_COEFFS[1:]:
            ps = c + x2 * ps
        s = x + x * x2 * ps
        pc = COS_COEFFS[0]
        for c in COS_COEFFS[1:]:
            pc = c + x2 * pc
        c = 1.0 + x2 * pc
        # Quadrant k rotates by k quarter turns: (s, c), (c, -s), (-s, -c), (-c, s).
        swap = (quadrant == 1.0) | (quadrant == 3.0)
        odd_s = A.where(swap, c, s)
        odd_c = A.where(swap, s, c)
        sin = A.where(quadrant >= 2.0, -odd_s, odd_s)
        cos = A.where((quadrant == 1.0) | (quadrant == 2.0), -odd_c, odd_c)
        y = sin + cos
    return y


M32, M64 = (1 << 32) - 1, (1 << 64) - 1
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def mix64(v):
    """sl_mix64 of a Python int: SplitMix64's first output seeded with v."""
    v = (v + MIX_ADD) & M64
    v = ((v ^ (v >> 30)) * MIX_MUL1) & M64
    v = ((v ^ (v >> 27)) * MIX_MUL2) & M64
    return v ^ (v >> 31)


def philox_key(seed, stream):
    """sl_philox_key_for(seed, stream) as two Python ints (low word, high word)."""
    mixed = mix64(seed ^ mix64(stream))
    return mixed & M32, mixed >> 32


def philox4x32_10(c, key):
    """sl_philox4x32_10 on counters c, four arrays of uint32 words held in a
    64-bit type (uint64, or int64 whose products wrap alike: the high word
    is masked after the shift, which an int64 shift fills with sign bits);
    key, two Python ints. Returns the four output words alike."""
    c0, c1, c2, c3 = c
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + PHILOX_W0) & M32, (k1 + PHILOX_W1) & M32
        p0 = c0 * PHILOX_M0
        p1 = c2 * PHILOX_M1
        c0, c1, c2, c3 = ((p1 >> 32) & M32) ^ c1 ^ k0, p1 & M32, ((p0 >> 32) & M32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def dropout_threshold(p):
    """ceil(p 2^32) of float32 p in [0, 1), as sluice's dropout computes it
    (p 2^32 is exact in double)."""
    scaled = float(p) * 4294967296.0
    whole = int(scaled)
    return whole + (whole < scaled)


def resize_axis(d, size_in, out, A):
    """sl__body_resize_axis for output indices d (an int64 array) of an axis
    resized from size_in (a Python int, or an int64 array broadcasting with
    d: one side per element) to out: the source position ((2d + 1) size_in -
    out) / (2 out), clamped to [0, size_in - 1], as integer part i0 and
    fraction. Returns (i0, i1, w): the two source indices and i1's weight,
    the fraction rounded to float32 by one division of two integers exact in
    float32 (A.to_f32 of the numerator, A.f32 of the denominator)."""
    den = 2 * out
    num = (2 * d + 1) * size_in - out
    below = num < 0
    whole = A.where(below, 0, num // den)
    frac = A.where(below, 0, num % den)
    last = whole >= size_in - 1
    whole = A.where(last, size_in - 1, whole)
    frac = A.where(last, 0, frac)
    return whole, A.where(whole + 1 < size_in, whole + 1, whole), A.to_f32(frac) / A.f32(den)


def bilinear(p00, p01, p10, p11, wx, wy):
    """sl__body_bilinear: the lerp along the width of the top and bottom
    source values, then along the height, each step one float32 operation
    (a peer that computes it in place must keep this order: b - a, times
    the weight, plus a)."""
    top = p00 + wx * (p01 - p00)
    bot = p10 + wx * (p11 - p10)
    return top + wy * (bot - top)


LN10 = 2.302585092994045684017991454684  # melspec_consts.c's LN10, the same double
# Whisper's log, as sl__log_mel_with applies it: log10 of the mel energy
# floored at LOG_MEL_FLOOR, then at most LOG_MEL_DECADES below the element's
# loudest value, then (y + LOG_MEL_SHIFT) * LOG_MEL_SCALE, all in float32.
LOG_MEL_FLOOR = 1e-10
LOG_MEL_DECADES = 8.0
LOG_MEL_SHIFT = 4.0
LOG_MEL_SCALE = 0.25


def log_mel_frames(samples, p):
    """The number of whole frames of p["frame"] samples, p["hop"] apart, in a
    waveform of samples (sluice drops a partial last frame)."""
    return 1 + (samples - p["frame"]) // p["hop"]


def hann_window(frame):
    """The periodic Hann window of frame samples, as Python floats:
    w[n] = 1/2 - cos(2 pi n / frame) / 2 (torch.hann_window's default; numpy's
    np.hanning is the symmetric one, which differs)."""
    return [0.5 - 0.5 * math.cos(TWO_PI * n / frame) for n in range(frame)]


def mel_filter_bank(sample_rate, n_fft, mels):
    """sluice's HTK mel filter bank, n_fft / 2 + 1 rows (frequency bins) of
    mels Python floats: filter m rises from edge m to 1 at edge m + 1 and
    falls to edge m + 2, the mels + 2 edges evenly spaced in mel from 0 Hz to
    Nyquist. Each step is the C source's double operation in its order, with
    libm's log and exp for sluice's libm-free ones (they differ by an ulp of
    a double, which rounding to float32 almost always hides)."""

    def hz_to_mel(hz):
        return 2595.0 * math.log(1.0 + hz / 700.0) / LN10

    def mel_to_hz(mel):
        return 700.0 * (math.exp(mel * LN10 / 2595.0) - 1.0)

    top = hz_to_mel(sample_rate / 2.0)
    edges = [mel_to_hz(top * i / (mels + 1)) for i in range(mels + 2)]
    rows = []
    for j in range(n_fft // 2 + 1):
        f = j * sample_rate / n_fft
        row = []
        for m in range(mels):
            rise = (f - edges[m]) / (edges[m + 1] - edges[m])
            fall = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1])
            w = rise if rise < fall else fall
            row.append(w if w > 0.0 else 0.0)
        rows.append(row)
    return rows

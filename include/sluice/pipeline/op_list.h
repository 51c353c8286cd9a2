/* The one list of ops. Each line names an op once: its sl_op_kind
 * (SL_OP_<NAME>), its name (what adapters declare, records list and `sluice
 * list` prints, and the suffix of its descriptor sl__op_<name>_desc in
 * engine/ops/<name>.c or a file it shares), and what it does. The enum, the
 * names and the descriptor table are all generated from it, so adding an op
 * is one line here and its descriptor file (CONTRIBUTING.md).
 *
 * The order is the enum's, which transform sets (one bit per kind) and
 * records depend on: add new ops at the end. */
#ifndef SLUICE_OP_LIST_H
#define SLUICE_OP_LIST_H

#define SL_OP_LIST(X)                                                                                                  \
    X(PACK_TOKENS, pack_tokens, "cut a token stream into sequences (first op only)")                                   \
    X(NORMALIZE, normalize, "per-channel (x - mean) * (1 / std); u8 or f32 in, f32 out")                               \
    X(SCALE, scale, "x * value")                                                                                       \
    X(CLIP, clip, "x < lo ? lo : (x > hi ? hi : x)")                                                                   \
    X(ADD, add, "x + value")                                                                                           \
    X(MULTIPLY, multiply, "x * value")                                                                                 \
    X(RANDOM_CROP, random_crop, "crop an h' x w' window at a random offset, zero-pad back, centred")                   \
    X(RANDOM_HFLIP, random_hflip, "mirror the width axis with probability p")                                          \
    X(ZSCORE, zscore, "per element: (x - mean) * (1 / std) over all its values, f32")                                  \
    X(RANDOM_CROP3D, random_crop3d, "a d' x h' x w' patch of a volume at a random offset; the patch is the output")    \
    X(RANDOM_FLIP3D, random_flip3d, "mirror each of a volume's three axes independently with probability p")           \
    X(ONE_HOT, one_hot, "an i32 class label to an f32 [classes] one-hot vector")                                       \
    X(MIXUP, mixup, "batch op: lam x + (1 - lam) x[partner], labels alike; lam ~ Beta(alpha, alpha)")                  \
    X(CUTMIX, cutmix, "batch op: a box from x[partner] pasted in; labels weighted by the box's area")                  \
    X(TRIG_ROUNDS, trig_rounds, "y = sin y + cos y, n times per f32 value: IO-4's expensive op")                       \
    X(CACHE, cache, "keep each element's output of the ops before it; later epochs read it back")                      \
    X(RESIZE, resize, "bilinear resize to out_h x out_w, half-pixel centres; u8 or f32 in, f32 out")                   \
    X(RANDOM_RESIZED_CROP, random_resized_crop,                                                                        \
      "a random box (scale, aspect), bilinearly resized to out_h x out_w; f32 out")                                    \
    X(PAD_TOKENS, pad_tokens, "truncate or pad a fixed-capacity token field to a length, ending with an end token")    \
    X(LOG_MEL, log_mel, "waveform f32 [samples] to a log-mel spectrogram f32 [frames, mels]")                          \
    X(LOG1P, log1p, "log(1 + x) on f32, libm-free (docs/determinism.md states its bound)")                             \
    X(HASH_IDS, hash_ids, "each i64 id of column j to mix64(id) >> 32 mod size[j]; missing ids stay -1")               \
    X(BAG_OFFSETS, bag_offsets, "batch: CSR end offsets of each column's embedding bag, a new i64 field")              \
    X(BUCKET_BY_LENGTH, bucket_by_length, "order: batches of similar lengths within windows of the shuffled epoch")    \
    X(PAD_TO_MULTIPLE, pad_to_multiple,                                                                                \
      "batch: narrow a sequence field to its longest length rounded up to a multiple")                                 \
    X(ATTENTION_MASK, attention_mask, "batch: a u8 field, 1 at a sequence's tokens and 0 at its pads")                 \
    X(AFFINE, affine, "per-channel x * scale[c] + bias[c] with learnable scale and bias, f32")                         \
    X(DROPOUT, dropout, "train: keyed mask per value, kept values x / (1 - p), dropped 0; eval: identity")             \
    X(REBATCH, rebatch, "batch op: split into micro-batches (copies) and concatenate them back")                       \
    X(ROT90, rot90, "rotate a square image by k quarter turns counter-clockwise, k uniform in 0..3")                   \
    X(GAUSSIAN_NOISE, gaussian_noise, "x + sigma z, z a standard normal variate per value (docs/determinism.md)")      \
    X(RANDOM_BRIGHTNESS, random_brightness, "x + d, d uniform in [-delta, delta] per element")                         \
    X(RANDOM_SCALE, random_scale, "x * f, f uniform in [lo, hi] per element")                                          \
    X(BRANCH_MEAN, branch_mean, "the next ops_a ops and the ops_b after them as two branches from x; (a + b) / 2")     \
    X(RANDOM_APPLY, random_apply, "the next ops_a ops run on an element with probability p")                           \
    X(RANDOM_CHOICE, random_choice, "per element, the next ops_a ops with probability p, else the ops_b after them")

#endif

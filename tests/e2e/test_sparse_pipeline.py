"""The sparse workers' batches made ahead (docs/sparse.md, "The keyed star", "Keyed sharded
servers", "Keyed async"): a worker compacts a batch (and, in the star, encodes its key list)
one or two steps before it trains on it, while it waits for a reply, but only where that batch
is already fixed: within the epoch of the step in progress, never past the last step. What it
trains must not change: every epoch length around those edges (1 to 4 steps an epoch, 3
epochs) trains the dense exchange's bits in the star, over 2 servers and in async (one worker:
async is deterministic then)."""

import test_sparse_training as st

import harness as h

FTRL = "{type: ftrl, lr: 0.3, l1: 0.01}"
ROWS = 630  # the training rows of st.libsvm's 700 (validation 0.1)


def same_at_batch(tmp, name, data, batch, **kw):
    """st.same_model with training.batch_size `batch` instead of 50."""
    config = st.CONFIG
    st.CONFIG = config.replace("batch_size: 50", f"batch_size: {batch}")
    try:
        return st.same_model(tmp, name, data, optimizer=FTRL, **kw)
    finally:
        st.CONFIG = config


def test_batches_made_ahead_train_the_dense_bits_at_every_epoch_length(tmp):
    binary = st.libsvm(tmp / "binary.svm", "binary")
    for steps in (1, 3, 4):
        batch = -(-ROWS // steps)
        for name, aggregation, workers in [("star", st.STAR, 2), ("servers", st.SERVERS, 2),
                                           ("async", st.ASYNC2, 1)]:
            s = same_at_batch(tmp, f"{name}-{steps}", binary, batch, aggregation=aggregation,
                              workers=workers)
            assert s["steps"] == 3 * steps, (name, steps, s["steps"])


if __name__ == "__main__":
    h.main([test_batches_made_ahead_train_the_dense_bits_at_every_epoch_length])

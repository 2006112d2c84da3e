#pragma once
// Subnormal doubles (below 2.2e-308 in magnitude) are flushed to zero, on input and on output,
// in every process and thread that trains or predicts.
//
// Why: a saturated model makes them all the time (softmax probabilities of e^-740, sigmoid tails
// e^-720, their products with the inputs in the gradient, the optimizer's steps on them), and
// an x86 core takes a microcode assist of about a hundred cycles for each operation that meets
// one: a 1M-parameter softmax step ran 3.4x slower on an Intel Xeon for that alone. Their
// contribution to a loss or a parameter is below a double's resolution of any value near 1.
// TensorFlow and XLA flush them on CPU for the same reason; PyTorch offers it
// (torch.set_flush_denormal).
//
// Determinism: the flush follows one rule on every x86-64 CPU (SSE's FTZ and DAZ bits, which AVX
// obeys too), so results stay bit-identical across runs, transports and x86 machines as before.
// arm64 sets FPCR.FZ, the same rule but for results that round up to the smallest normal number
// (arm flushes them, x86 keeps them). Elsewhere this is a no-op.
//
// Threading: the setting belongs to the calling thread, and threads it starts afterwards inherit
// it (POSIX: pthread_create copies the floating-point environment). The binary's main() calls it
// first thing, so the coordinator, its server and heartbeat threads, workers (processes or
// inproc threads) and predict/eval all compute alike; the unit tests' main does the same.

namespace dt::subnormals {

// Flushes subnormal inputs and results to zero on this thread (and threads it starts later).
void flush() noexcept;

// True when this thread flushes subnormals (tests, diagnostics).
[[nodiscard]] bool flushed() noexcept;

}  // namespace dt::subnormals

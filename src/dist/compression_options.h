// Gradient compression settings of the `sync` strategy (docs/compression.md):
// which compressor, its parameters, error feedback and the uncompressed warm-up.
// The run config's dist.compression* keys fill them (train/run_setup.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

enum class CompressionKind {
  none,      // fp32 buckets, today's sync (no compressor is created)
  fp16,      // IEEE half, all-reduced (linear)
  bf16,      // bfloat16, all-reduced (linear)
  qsgd,      // stochastic quantisation to `bits` per element, all-gathered (unbiased)
  topk,      // the largest |g| of each bucket, indices + values all-gathered (biased)
  powersgd,  // rank-r P Q^T of each weight matrix, P and Q all-reduced (biased)
};
const char* compression_kind_name(CompressionKind kind);
std::vector<CompressionKind> all_compression_kinds();
// The kinds whose compressed gradient is biased (topk, powersgd): error feedback is on by default.
bool compression_is_biased(CompressionKind kind);

// dist.error_feedback: auto = on for the biased kinds, off for the others.
enum class ErrorFeedbackMode { auto_, on, off };
const char* error_feedback_mode_name(ErrorFeedbackMode mode);  // "auto" | "on" | "off"
std::vector<ErrorFeedbackMode> all_error_feedback_modes();

// A weight matrix inside the parameter arena: rows x cols floats from `offset`, row-major
// (a conv's (oc, ic*kh*kw), a fully connected layer's (outputs, inputs)). PowerSGD compresses
// these; every other parameter (biases, batch norm) travels uncompressed, as in the paper.
struct WeightMatrix {
  int64_t offset = 0, rows = 0, cols = 0;
};

// The rows of `m` PowerSGD compresses in the arena range [begin, end): the rows lying wholly in
// it, when their rank-`r` form sends less than they do ((rows + cols) r < rows cols). `rows` is
// 0 when it compresses none. The trainer's compressor and the performance model both use it.
struct MatrixRows {
  int64_t first = 0, rows = 0;
};
MatrixRows powersgd_rows(const WeightMatrix& m, int64_t begin, int64_t end, int64_t r);

struct CompressionOptions {
  CompressionKind kind = CompressionKind::none;
  int qsgd_bits = 8;             // bits per element, sign included (2..8)
  int64_t qsgd_bucket = 512;     // elements sharing one norm
  double topk_ratio = 0.01;      // fraction of each bucket's elements sent
  int powersgd_rank = 4;         // r
  bool powersgd_warm_start = true;  // keep Q from the previous step
  ErrorFeedbackMode error_feedback = ErrorFeedbackMode::auto_;
  int64_t warmup_steps = 0;      // the first steps exchange fp32 gradients
  uint64_t seed = 1;             // qsgd's rounding and powersgd's first Q derive from it
  std::vector<WeightMatrix> matrices;  // powersgd: the arena's weight matrices (set_up_exchange)

  bool enabled() const { return kind != CompressionKind::none; }
  bool error_feedback_on() const {
    return error_feedback == ErrorFeedbackMode::on ||
           (error_feedback == ErrorFeedbackMode::auto_ && compression_is_biased(kind));
  }
};

}  // namespace ts

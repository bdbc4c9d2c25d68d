// dist-internal: the gradient compressor interface of the `sync` strategy (docs/compression.md).
// A compressor exchanges one gradient bucket in compressed form: it
// encodes this rank's bucket into a wire buffer, moves the buffers (all-reduce for the linear
// ones: fp16, bf16, PowerSGD's P and Q; all-gather for qsgd and topk), and decodes the mean over
// the ranks back into the bucket. The codecs themselves are free functions in each
// compressor's header, so tests check them on known vectors without MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dist/allreduce.h"
#include "dist/bucket_plan.h"
#include "dist/communicator.h"
#include "dist/compression_options.h"

namespace ts {

// What one exchange cost on this rank.
struct CompressionCost {
  int64_t wire_bytes = 0;  // bytes of this rank's compressed contribution (docs: the bytes formula)
  double compress_s = 0;   // encoding (and PowerSGD's products and orthogonalisation)
  double decompress_s = 0; // decoding and summing the received buffers
};

// One bucket to exchange: `count` floats at arena offset `offset`, bucket `index` of the plan,
// in step `step` (seeds the stochastic compressors, so runs repeat exactly).
struct BucketSlot {
  int64_t offset = 0, count = 0;
  size_t index = 0;
  int64_t step = 0;
};

class Compressor {
 public:
  virtual ~Compressor() = default;
  virtual CompressionKind kind() const = 0;
  // Replaces data[0, count) (this rank's gradients, error feedback already added) with the mean
  // over the ranks of what their compressed buckets decode to, the same bits on every rank.
  // `sent` (count floats) receives what this rank's own contribution decodes to (PowerSGD: the
  // decoded mean, as in the paper), for error feedback. Collective, in plan order.
  virtual void exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent, CompressionCost& cost) = 0;
  // Checkpoints: what the compressor carries from one step to the next (PowerSGD with warm
  // start: its Q matrices; the others nothing: their randomness is seeded by step and rank), and
  // taking it back for the plan's `buckets` before the first step of a resumed run.
  virtual std::vector<float> checkpoint_state() const { return {}; }
  virtual void restore_checkpoint_state(const std::vector<Bucket>& buckets, const std::vector<float>& state);
};

// The all-gathered compressors (qsgd, topk): each rank encodes its bucket into a buffer of the
// same size on every rank, the buffers are all-gathered, and every rank decodes and sums them in
// rank order, then scales by 1/N (the same bits everywhere).
class GatheredCompressor : public Compressor {
 public:
  void exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent, CompressionCost& cost) final;

 protected:
  // Bytes of one rank's encoded bucket of `count` elements.
  virtual int64_t wire_bytes(int64_t count) const = 0;
  virtual void encode(const float* src, const BucketSlot& slot, uint8_t* wire) const = 0;
  // dst[0, count) += what `wire` decodes to.
  virtual void decode_add(const uint8_t* wire, int64_t count, float* dst) const = 0;

 private:
  std::vector<uint8_t> wire_, all_;  // reused: the timed loop does not allocate after the first step
};

// The compressor of `options` (kind != none). `algorithm` sums PowerSGD's P and Q and its
// uncompressed parameters; `rank` seeds qsgd's stochastic rounding per rank.
std::unique_ptr<Compressor> make_compressor(const CompressionOptions& options, AllreduceAlgorithm algorithm, int rank);

}  // namespace ts

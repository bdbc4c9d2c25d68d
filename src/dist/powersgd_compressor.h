// dist-internal: PowerSGD (Vogels et al. 2019), rank-r compression of each weight matrix by one
// step of power iteration, biased, all-reduced. For a matrix M (n x m) of the bucket and its Q
// (m x r): P = M Q, all-reduced to the mean; P's columns orthonormalised (Gram-Schmidt);
// Q = M^T P, all-reduced to the mean; the bucket gets P Q^T. Warm start keeps Q for the next
// step (else a fresh random Q each step, the same on every rank). A matrix is compressed only
// where that sends less, (n + m) r < n m, and only its rows that lie wholly in the bucket; every
// other element (biases, batch norm, partial rows) is all-reduced in fp32, as in the paper.
// Error: exact when M's mean has rank <= r; else the projection of the mean onto span(P).
// Wire per rank: 4 (sum over matrices of (n + m) r + uncompressed elements) bytes.
#pragma once

#include <map>
#include <vector>

#include "dist/compressor.h"

namespace ts {

// Orthonormalises the r columns of p (rows x r, row-major) in place, by modified Gram-Schmidt
// (sums in double); a column that is (numerically) dependent on the earlier ones becomes zero.
void orthonormalise_columns(float* p, int64_t rows, int64_t r);

class PowerSgdCompressor : public Compressor {
 public:
  PowerSgdCompressor(const CompressionOptions& options, AllreduceAlgorithm algorithm);
  CompressionKind kind() const override { return CompressionKind::powersgd; }
  void exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent, CompressionCost& cost) override;
  // With warm start, once the compressed steps have begun: every bucket's Q matrices, in bucket
  // and slice order (the same on every rank). Otherwise nothing: a fresh Q is seeded by step.
  std::vector<float> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<Bucket>& buckets, const std::vector<float>& state) override;

 private:
  // A matrix's whole rows inside one bucket, with its Q.
  struct Slice {
    int64_t offset = 0, rows = 0, cols = 0;  // offset within the bucket
    std::vector<float> q;                     // (cols x r), row-major
  };
  struct BucketLayout {
    std::vector<Slice> slices;
    std::vector<int64_t> plain;  // offsets within the bucket of the elements sent uncompressed
  };
  BucketLayout& layout_of(const BucketSlot& slot);
  void fresh_q(Slice& slice, size_t bucket, size_t index, int64_t step) const;

  const std::vector<WeightMatrix> matrices_;
  const int rank_r_;
  const bool warm_start_;
  const uint64_t seed_;
  const AllreduceAlgorithm algorithm_;
  std::map<size_t, BucketLayout> layouts_;  // by bucket index, made on first use
  std::vector<float> p_, q_;                 // the all-reduce buffers
};

}  // namespace ts

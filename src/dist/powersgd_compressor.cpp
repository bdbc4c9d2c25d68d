// PowerSGD (see powersgd_compressor.h).
#include "dist/powersgd_compressor.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/reduce_kernel.h"

namespace ts {

void orthonormalise_columns(float* p, int64_t rows, int64_t r) {
  for (int64_t j = 0; j < r; ++j) {
    double before = 0;
    for (int64_t i = 0; i < rows; ++i) before += static_cast<double>(p[i * r + j]) * p[i * r + j];
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += static_cast<double>(p[i * r + k]) * p[i * r + j];
      for (int64_t i = 0; i < rows; ++i) p[i * r + j] -= static_cast<float>(dot) * p[i * r + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += static_cast<double>(p[i * r + j]) * p[i * r + j];
    norm = std::sqrt(norm);
    // What is left of a column that lay in the span of the earlier ones is rounding noise: drop it.
    const bool dependent = !(norm > 1e-5 * std::sqrt(before)) || !std::isfinite(norm);
    for (int64_t i = 0; i < rows; ++i) p[i * r + j] = dependent ? 0.0f : static_cast<float>(p[i * r + j] / norm);
  }
}

PowerSgdCompressor::PowerSgdCompressor(const CompressionOptions& options, AllreduceAlgorithm algorithm)
    : matrices_(options.matrices),
      rank_r_(options.powersgd_rank),
      warm_start_(options.powersgd_warm_start),
      seed_(options.seed),
      algorithm_(algorithm) {}

// Which rows of which matrices this bucket compresses, and the elements it sends as they are.
PowerSgdCompressor::BucketLayout& PowerSgdCompressor::layout_of(const BucketSlot& slot) {
  auto found = layouts_.find(slot.index);
  if (found != layouts_.end()) return found->second;
  BucketLayout& layout = layouts_[slot.index];
  const int64_t begin = slot.offset, end = slot.offset + slot.count;
  for (const WeightMatrix& m : matrices_) {
    const MatrixRows whole = powersgd_rows(m, begin, end, rank_r_);
    if (whole.rows == 0) continue;
    Slice slice;
    slice.offset = m.offset + whole.first * m.cols - begin;
    slice.rows = whole.rows;
    slice.cols = m.cols;
    layout.slices.push_back(std::move(slice));
  }
  std::sort(layout.slices.begin(), layout.slices.end(), [](const Slice& a, const Slice& b) { return a.offset < b.offset; });
  int64_t at = 0;
  for (const Slice& s : layout.slices) {
    for (int64_t i = at; i < s.offset; ++i) layout.plain.push_back(i);
    at = s.offset + s.rows * s.cols;
  }
  for (int64_t i = at; i < slot.count; ++i) layout.plain.push_back(i);
  for (size_t i = 0; i < layout.slices.size(); ++i) fresh_q(layout.slices[i], slot.index, i, 0);
  return layout;
}

// A random normal Q, the same on every rank (seeded by bucket, slice and step, not by rank).
void PowerSgdCompressor::fresh_q(Slice& slice, size_t bucket, size_t index, int64_t step) const {
  Rng rng(seed_mix(seed_, seed_mix(bucket, index), static_cast<uint64_t>(step)));
  slice.q.resize(static_cast<size_t>(slice.cols * rank_r_));
  for (float& v : slice.q) v = static_cast<float>(rng.normal());
}

std::vector<float> PowerSgdCompressor::checkpoint_state() const {
  std::vector<float> state;
  if (!warm_start_) return state;
  for (const auto& [index, layout] : layouts_)  // std::map: bucket order
    for (const Slice& s : layout.slices) state.insert(state.end(), s.q.begin(), s.q.end());
  return state;
}

void PowerSgdCompressor::restore_checkpoint_state(const std::vector<Bucket>& buckets, const std::vector<float>& state) {
  if (state.empty()) return;  // no compressed step yet (warm-up), or no warm start: Q is fresh
  TS_CHECK(warm_start_, "checkpoint: PowerSGD without warm start keeps no Q, and the checkpoint holds " +
                            std::to_string(state.size()) + " values for it");
  size_t at = 0;
  for (size_t i = 0; i < buckets.size(); ++i)
    for (Slice& s : layout_of({buckets[i].first, buckets[i].second, i, 0}).slices) {
      TS_CHECK(at + s.q.size() <= state.size(), "checkpoint: PowerSGD's Q matrices are shorter (" +
                                                    std::to_string(state.size()) + " values) than this model's");
      std::copy(state.begin() + static_cast<std::ptrdiff_t>(at), state.begin() + static_cast<std::ptrdiff_t>(at + s.q.size()),
                s.q.begin());
      at += s.q.size();
    }
  TS_CHECK(at == state.size(), "checkpoint: PowerSGD's Q matrices hold " + std::to_string(state.size()) +
                                   " values, this model's " + std::to_string(at));
}

void PowerSgdCompressor::exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent,
                                  CompressionCost& cost) {
  BucketLayout& layout = layout_of(slot);
  const int64_t r = rank_r_;
  const float inv = 1.0f / static_cast<float>(comm.size());
  int64_t p_count = 0, q_count = 0;
  for (const Slice& s : layout.slices) p_count += s.rows * r, q_count += s.cols * r;
  p_.assign(static_cast<size_t>(p_count), 0.0f);
  q_.assign(static_cast<size_t>(q_count + static_cast<int64_t>(layout.plain.size())), 0.0f);
  const double t0 = now_seconds();
  float* p = p_.data();
  for (size_t n = 0; n < layout.slices.size(); ++n) {  // P = M Q
    Slice& s = layout.slices[n];
    if (!warm_start_ && slot.step > 0) fresh_q(s, slot.index, n, slot.step);
    const float* m = data + s.offset;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t k = 0; k < s.cols; ++k)
        for (int64_t j = 0; j < r; ++j) p[i * r + j] += m[i * s.cols + k] * s.q[static_cast<size_t>(k * r + j)];
    p += s.rows * r;
  }
  const double t1 = now_seconds();
  allreduce_sum(comm, algorithm_, p_.data(), p_count);
  scale(p_.data(), p_count, inv);
  const double t2 = now_seconds();
  p = p_.data();
  float* q = q_.data();
  for (Slice& s : layout.slices) {  // orthonormal P, then Q = M^T P
    orthonormalise_columns(p, s.rows, r);
    const float* m = data + s.offset;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t k = 0; k < s.cols; ++k)
        for (int64_t j = 0; j < r; ++j) q[k * r + j] += m[i * s.cols + k] * p[i * r + j];
    p += s.rows * r, q += s.cols * r;
  }
  for (size_t i = 0; i < layout.plain.size(); ++i) q[i] = data[layout.plain[i]];
  const double t3 = now_seconds();
  allreduce_sum(comm, algorithm_, q_.data(), static_cast<int64_t>(q_.size()));
  scale(q_.data(), static_cast<int64_t>(q_.size()), inv);
  const double t4 = now_seconds();
  p = p_.data(), q = q_.data();
  for (Slice& s : layout.slices) {  // M = P Q^T; Q kept for the warm start
    float* m = data + s.offset;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t k = 0; k < s.cols; ++k) {
        float v = 0;
        for (int64_t j = 0; j < r; ++j) v += p[i * r + j] * q[k * r + j];
        m[i * s.cols + k] = v;
        if (sent) sent[s.offset + i * s.cols + k] = v;
      }
    std::copy(q, q + s.cols * r, s.q.begin());
    p += s.rows * r, q += s.cols * r;
  }
  for (size_t i = 0; i < layout.plain.size(); ++i) {  // sent exactly: nothing for error feedback
    const int64_t at = layout.plain[i];
    if (sent) sent[at] = data[at];
    data[at] = q[i];
  }
  cost.compress_s += (t1 - t0) + (t3 - t2);
  cost.decompress_s += now_seconds() - t4;
  cost.wire_bytes += static_cast<int64_t>(p_.size() + q_.size()) * static_cast<int64_t>(sizeof(float));
}

}  // namespace ts

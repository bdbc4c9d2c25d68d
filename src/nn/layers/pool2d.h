// Max and average pooling (average excludes padding); floor rounding of the output size.
// src (mb,c,ih,iw) -> dst (mb,c,oh,ow). Max pooling keeps the argmax workspace for backward.
#pragma once

#include "core/buffer.h"
#include "nn/layer.h"

namespace ts {

struct Pool2dOptions {
  PoolKind kind = PoolKind::max;
  int64_t kh = 2, kw = 2;
  int64_t sh = 2, sw = 2;
  int64_t ph = 0, pw = 0;
};

class Pool2d : public Layer {
 public:
  Pool2d(std::string name, Pool2dOptions options);
  // Square kernel shorthand; stride defaults to the kernel size.
  Pool2d(std::string name, PoolKind kind, int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  std::string kind() const override { return "pool"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void set_batch(int64_t mb) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;
  const PoolDesc& desc() const { return desc_; }

 protected:
  Pool2dOptions options_;
  PoolDesc desc_;
  Buffer<uint8_t> workspace_;  // argmax for max pooling, sized by the backend
  size_t workspace_bytes_ = 0;
  Backend* workspace_backend_ = nullptr;
};

}  // namespace ts

// Per-layer work of a built-in model, read from the real net (nn/models.h build_model_graph:
// the layers, their descriptors and shapes), as three passes: forward (FP), backward gradient
// computation (BP-GC: the gradient of the layer's input, what backward propagates) and
// weight-gradient computation (BP-WU: the gradient of its weights, what the all-reduce sums).
// Convolutions and fully connected layers are GEMMs (a convolution through its im2col shapes);
// the other layers move memory (docs/model.md "Per-layer work").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "perfmodel/gemm_model.h"

namespace ts::perf {

enum class Pass { fp, bp_gc, bp_wu };
constexpr int kPasses = 3;

struct PassWork {
  GemmShape gemm;             // empty for layers that are not GEMMs (and for passes they skip)
  double flops = 0;           // for the whole minibatch
  double bytes = 0;           // memory traffic: the GEMM's matrices once, or what the op reads and writes
  double intensity_gemm = 0;  // flops / bytes of the whole GEMM (or of the op)
  double intensity_blocked = 0;  // of the cache-blocked macro-kernel (GEMMs with a known blocking)
};

struct LayerWork {
  int node = 0;               // node id in the net
  std::string name;           // "conv1"
  std::string kind;           // "conv", "fc", "bn", "relu", "pool", ...
  std::string descriptor;     // at batch 1, as the run file's /model table
  int64_t parameters = 0;     // floats of its weights and biases (its share of the all-reduce)
  bool fused = false;         // a ReLU the CPU backend computes inside its input's forward
  std::array<PassWork, kPasses> pass;
  const PassWork& of(Pass p) const { return pass[static_cast<size_t>(p)]; }
};

struct ModelWorkRequest {
  std::string model;          // a name of nn/models.h model_names()
  int64_t batch = 1;          // minibatch per worker
  double delta = 4;           // bytes per element (4: fp32, 2: bf16 / fp16)
  GemmBlocking blocking;      // for intensity_blocked
  double dropout = 0.0;       // the run's dropout (its layers exist only when > 0)
};

// The layers of the model in node order (the loss included), each with its three passes.
std::vector<LayerWork> model_work(const ModelWorkRequest& request);

// The passes of one convolution / fully connected layer as GEMMs for minibatch `mb`
// (exposed for tests): conv per group: FP m = oc/g, n = mb oh ow, k = ic/g kh kw; BP-GC
// m = ic/g kh kw, n = mb oh ow, k = oc/g; BP-WU m = oc/g, n = ic/g kh kw, k = mb oh ow.
// fc: FP m = mb, n = oc, k = ic; BP-GC m = mb, n = ic, k = oc; BP-WU m = oc, n = ic, k = mb.
std::array<GemmShape, kPasses> conv_gemms(const std::string& conv_descriptor, int64_t mb);
std::array<GemmShape, kPasses> fc_gemms(const std::string& fc_descriptor, int64_t mb);

}  // namespace ts::perf

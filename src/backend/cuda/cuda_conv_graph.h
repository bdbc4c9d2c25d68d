// Convolutions through cuDNN's graph (backend) API (cuda.conv_api: graph), the API PyTorch's
// cuDNN convolutions use: per direction an operation graph of one convolution; the engine
// configurations cuDNN's heuristics propose (mode A, then the fallback list); those the run
// allows (numerical notes: no tensor cores in fp32, never down-converted inputs,
// reduced-precision reductions only with cuda.reduced_precision_reduction (PyTorch allows them),
// nothing non-deterministic under cuda.algorithms: deterministic; no runtime-compiled engines,
// which would make planning take seconds) whose plan finalizes
// and whose workspace fits the limit; chosen as the legacy algorithms are (cuda_conv_algos.h):
// timed on scratch buffers (find), or the heuristics' first (heuristic, deterministic). The
// execution plan is kept and run with a variant pack of the call's pointers (rebuilt only when
// they change).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cudnn_graph_descriptor.h"
#include "backend/descriptors.h"

namespace ts::cuda {

enum class ConvDirection { forward, backward_data, backward_filter };

// What the graphs describe: the convolution, the type cuDNN computes in (f32 accumulation), and
// whether activations are NHWC (filters KRSC) or NCHW (filters KCRS).
struct ConvGeometry {
  ConvDesc d;
  DType dtype = DType::f32;
  bool nhwc = false;
};

// One direction's chosen execution plan.
class ConvGraph {
 public:
  ConvGraph() = default;
  // `parts`: every descriptor the plan was made from, kept alive with it.
  // `reduced`: the engine reduces in the activations' precision (its plan note says so).
  ConvGraph(std::vector<GraphDescriptor> parts, GraphDescriptor plan, size_t workspace, int64_t engine,
            const char* chosen_by, float find_ms, bool reduced);
  ConvGraph(ConvGraph&&) = default;
  ConvGraph& operator=(ConvGraph&&) = default;

  size_t workspace() const { return workspace_; }
  float find_ms() const { return find_ms_; }  // the search's time of one run (ms), -1 when not searched
  // "ENGINE_12(graph,find,0.412ms)", "ENGINE_3(graph,heuristic)", "ENGINE_7(graph,find,0.2ms,reduced)":
  // for the plan note.
  std::string note() const;
  // x (mb,ic,ih,iw), w (oc,ic/g,kh,kw), y (mb,oc,oh,ow) in the geometry's type and layouts; the
  // direction writes y (forward), x (backward_data) or w (backward_filter). Queued on the
  // handle's stream.
  void execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace);

 private:
  std::vector<GraphDescriptor> parts_;
  GraphDescriptor plan_;
  GraphDescriptor pack_;         // the variant pack of pointers_
  std::vector<void*> pointers_;  // x, w, y, workspace of pack_
  size_t workspace_ = 0;
  int64_t engine_ = -1;          // cuDNN's global engine index
  const char* chosen_by_ = "";
  float find_ms_ = -1;
  bool reduced_ = false;
};

struct ConvGraphs {
  ConvGraph fwd, bwd_data, bwd_filter;
  size_t max_workspace() const;
};

// The three directions' plans, or nullopt with `why` set when some direction has none that the
// run allows (the caller falls back to the legacy API).
std::optional<ConvGraphs> choose_conv_graphs(CudaContext& ctx, const ConvGeometry& g, std::string& why);

}  // namespace ts::cuda

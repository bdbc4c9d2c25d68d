// Convolutions through cuDNN's graph API (see cuda_conv_graph.h).
#include "backend/cuda/cuda_conv_graph.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_device_memory.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

constexpr int64_t kX = 'x', kW = 'w', kY = 'y';  // the tensors' unique ids
constexpr int64_t kConfigsPerMode = 12;            // engine configurations asked of each heuristic mode
constexpr int kTimedRuns = 2;                      // after one warm-up run; the faster counts

// A tensor of logical dims (n, c, h, w) stored with `strides`.
GraphDescriptor tensor(int64_t uid, DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  GraphDescriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = cudnn_dtype(t);
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  d.set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims);
  d.set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides);
  d.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
  d.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);  // cudaMalloc'd buffers: 256
  d.finalize();
  return d;
}

// (n, c, h, w) stored NCHW, or NHWC (channels innermost); filters (k, c, r, s) as KCRS or KRSC.
std::vector<int64_t> strides_of(int64_t c, int64_t h, int64_t w, bool nhwc) {
  if (nhwc) return {h * w * c, 1, w * c, c};
  return {c * h * w, h * w, w, 1};
}

GraphDescriptor convolution(const ConvDesc& d) {
  GraphDescriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  c.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2);
  c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  c.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  c.set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1});
  c.set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {d.sh, d.sw});
  c.set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {d.ph, d.pw});
  c.set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {d.ph, d.pw});
  c.finalize();
  return c;
}

// The operation of one direction over x, w, y (the gradients' tensors are x's, w's, y's).
GraphDescriptor operation(ConvDirection dir, const GraphDescriptor& x, const GraphDescriptor& w,
                          const GraphDescriptor& y, const GraphDescriptor& conv) {
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const Names forward{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const Names data{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const Names filter{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const Names& n = dir == ConvDirection::forward ? forward : dir == ConvDirection::backward_data ? data : filter;
  GraphDescriptor op(n.type);
  op.set_descriptor(n.x, x);
  op.set_descriptor(n.w, w);
  op.set_descriptor(n.y, y);
  op.set_descriptor(n.conv, conv);
  const float alpha = 1.0f, beta = 0.0f;
  op.set(n.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  op.set(n.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  op.finalize();
  return op;
}

// Whether the run may take an engine (cuda_conv_graph.h): its numerical and behaviour notes.
// `reduces_in_low_precision` says whether it carries the reduced-precision-reduction note.
bool engine_allowed(const GraphDescriptor& engine, const CudaContext& ctx, bool& reduces_in_low_precision) {
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  const int64_t n = engine.get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, notes);
  reduces_in_low_precision = false;
  for (int64_t i = 0; i < n; ++i) {
    const cudnnBackendNumericalNote_t note = notes[i];
    if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) {
      if (!ctx.reduced_precision_reduction) return false;
      reduces_in_low_precision = true;
    }
    if (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && ctx.precision == Precision::fp32) return false;
    if (note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && ctx.algorithm_choice == AlgorithmChoice::deterministic)
      return false;
  }
  cudnnBackendBehaviorNote_t behaviours[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  const int64_t b = engine.get(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, behaviours);
  for (int64_t i = 0; i < b; ++i)
    if (behaviours[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  return true;
}

// The engine configurations one heuristic mode proposes for `graph`, best first (none when the
// mode has nothing for it).
std::vector<GraphDescriptor> proposed_configs(const GraphDescriptor& graph, cudnnBackendHeurMode_t mode,
                                              std::vector<GraphDescriptor>& keep) {
  GraphDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) return {};
  std::vector<GraphDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kConfigsPerMode; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t n = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               kConfigsPerMode, &n, raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(n, 0, kConfigsPerMode)));
  keep.push_back(std::move(heur));
  return configs;
}

struct Candidate {
  GraphDescriptor config, plan;
  size_t workspace = 0;
  int64_t engine = -1;
  bool reduced = false;  // reduces in the activations' precision (cuda.reduced_precision_reduction)
};

// The plan of one proposed configuration, when the run allows its engine, it finalizes on this
// device and its workspace fits `limit`.
std::optional<Candidate> candidate_of(GraphDescriptor config, CudaContext& ctx, size_t limit) try {
  GraphDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                               &raw) != CUDNN_STATUS_SUCCESS || n != 1)
    return std::nullopt;
  Candidate c;
  if (!engine_allowed(engine, ctx, c.reduced)) return std::nullopt;
  engine.get(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c.engine);
  c.plan = GraphDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  c.plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  c.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx.cudnn);
  if (c.plan.try_finalize() != CUDNN_STATUS_SUCCESS) return std::nullopt;
  int64_t bytes = 0;
  c.plan.get(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &bytes);
  if (bytes < 0 || static_cast<size_t>(bytes) > limit) return std::nullopt;
  c.workspace = static_cast<size_t>(bytes);
  c.config = std::move(config);
  return c;
} catch (const RuntimeError&) {  // an engine whose notes or sizes cannot be read is not taken
  return std::nullopt;
}

GraphDescriptor variant_pack(void* x, void* w, void* y, void* workspace) {
  GraphDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kX, kW, kY};
  void* data[3] = {x, w, y};
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  return pack;
}

// Buffers the size of the convolution's tensors, zeroed, and a workspace for the largest
// candidate; null when the device has no room (then the heuristics' order decides).
struct Scratch {
  DeviceMemory x, w, y, workspace;
};

std::optional<Scratch> allocate_scratch(CudaContext& ctx, const ConvGeometry& g, size_t workspace) {
  const ConvDesc& d = g.d;
  const size_t element = dtype_bytes(g.dtype);
  try {
    Scratch s{DeviceMemory(static_cast<size_t>(d.mb * d.ic * d.ih * d.iw) * element, "the engine search (src)"),
              DeviceMemory(static_cast<size_t>(d.weight_count()) * element, "the engine search (weights)"),
              DeviceMemory(static_cast<size_t>(d.mb * d.oc * d.oh() * d.ow()) * element, "the engine search (dst)"),
              DeviceMemory(workspace, "the engine search (workspace)")};
    for (const DeviceMemory* m : {&s.x, &s.w, &s.y})
      if (m->bytes()) TS_CUDA_CHECK(cudaMemsetAsync(m->get(), 0, m->bytes(), ctx.stream));
    return s;
  } catch (const RuntimeError&) {
    return std::nullopt;
  }
}

// One run of the plan timed with events (ms): the faster of kTimedRuns after a warm-up; -1 when
// the engine fails to run.
float time_candidate(CudaContext& ctx, const Candidate& c, Scratch& s) {
  GraphDescriptor pack = variant_pack(s.x.get(), s.w.get(), s.y.get(), s.workspace.get());
  if (cudnnBackendExecute(ctx.cudnn, c.plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) return -1;
  cudaEvent_t start = nullptr, end = nullptr;
  TS_CUDA_CHECK(cudaEventCreate(&start));
  TS_CUDA_CHECK(cudaEventCreate(&end));
  float best = std::numeric_limits<float>::infinity();
  for (int r = 0; r < kTimedRuns && best >= 0; ++r) {
    TS_CUDA_CHECK(cudaEventRecord(start, ctx.stream));
    const cudnnStatus_t status = cudnnBackendExecute(ctx.cudnn, c.plan.get(), pack.get());
    TS_CUDA_CHECK(cudaEventRecord(end, ctx.stream));
    TS_CUDA_CHECK(cudaEventSynchronize(end));
    float ms = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, end));
    best = status == CUDNN_STATUS_SUCCESS ? std::min(best, ms) : -1;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return best;
}

// One direction: its graph, the allowed candidates of heuristic mode A and the fallback list,
// and the choice among them.
std::optional<ConvGraph> choose_direction(CudaContext& ctx, const ConvGeometry& g, ConvDirection dir,
                                          std::string& why) {
  const ConvDesc& d = g.d;
  std::vector<GraphDescriptor> parts;
  parts.push_back(tensor(kX, g.dtype, {d.mb, d.ic, d.ih, d.iw}, strides_of(d.ic, d.ih, d.iw, g.nhwc)));
  const int64_t icg = d.ic / d.groups;
  parts.push_back(tensor(kW, g.dtype, {d.oc, icg, d.kh, d.kw}, strides_of(icg, d.kh, d.kw, g.nhwc)));
  parts.push_back(tensor(kY, g.dtype, {d.mb, d.oc, d.oh(), d.ow()}, strides_of(d.oc, d.oh(), d.ow(), g.nhwc)));
  parts.push_back(convolution(d));
  parts.push_back(operation(dir, parts[0], parts[1], parts[2], parts[3]));
  GraphDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, parts[4]);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx.cudnn);
  if (graph.try_finalize() != CUDNN_STATUS_SUCCESS) {
    why = "cuDNN builds no operation graph for it";
    return std::nullopt;
  }
  std::vector<Candidate> candidates;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK})
    for (GraphDescriptor& config : proposed_configs(graph, mode, parts))
      if (auto c = candidate_of(std::move(config), ctx, ctx.workspace_limit)) candidates.push_back(std::move(*c));
  parts.push_back(std::move(graph));
  if (candidates.empty()) {
    why = "no engine the run allows fits the workspace limit";
    return std::nullopt;
  }
  size_t chosen = 0;
  float chosen_ms = -1;
  const char* by = ctx.algorithm_choice == AlgorithmChoice::deterministic ? "deterministic" : "heuristic";
  if (ctx.algorithm_choice == AlgorithmChoice::find) {
    size_t largest = 0;
    for (const Candidate& c : candidates) largest = std::max(largest, c.workspace);
    if (auto scratch = allocate_scratch(ctx, g, largest)) {
      for (size_t i = 0; i < candidates.size(); ++i) {
        const float ms = time_candidate(ctx, candidates[i], *scratch);
        if (ms >= 0 && (chosen_ms < 0 || ms < chosen_ms)) chosen = i, chosen_ms = ms;
      }
      if (chosen_ms >= 0) by = "find";
    }
  }
  Candidate& c = candidates[chosen];
  parts.push_back(std::move(c.config));
  return ConvGraph(std::move(parts), std::move(c.plan), c.workspace, c.engine, by, chosen_ms, c.reduced);
}

}  // namespace

ConvGraph::ConvGraph(std::vector<GraphDescriptor> parts, GraphDescriptor plan, size_t workspace, int64_t engine,
                     const char* chosen_by, float find_ms, bool reduced)
    : parts_(std::move(parts)),
      plan_(std::move(plan)),
      workspace_(workspace),
      engine_(engine),
      chosen_by_(chosen_by),
      find_ms_(find_ms),
      reduced_(reduced) {}

std::string ConvGraph::note() const {
  char time[32] = "";
  if (find_ms_ >= 0) std::snprintf(time, sizeof time, ",%.3fms", static_cast<double>(find_ms_));
  return "ENGINE_" + std::to_string(engine_) + "(graph," + chosen_by_ + time + (reduced_ ? ",reduced" : "") + ")";
}

void ConvGraph::execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace) {
  const std::vector<void*> now{x, w, y, workspace};
  if (!pack_ || now != pointers_) {
    pack_ = variant_pack(x, w, y, workspace);
    pointers_ = now;
  }
  TS_CUDNN_CHECK(cudnnBackendExecute(handle, plan_.get(), pack_.get()));
}

size_t ConvGraphs::max_workspace() const {
  return std::max({fwd.workspace(), bwd_data.workspace(), bwd_filter.workspace()});
}

std::optional<ConvGraphs> choose_conv_graphs(CudaContext& ctx, const ConvGeometry& g, std::string& why) {
  auto fwd = choose_direction(ctx, g, ConvDirection::forward, why);
  if (!fwd) return std::nullopt;
  auto data = choose_direction(ctx, g, ConvDirection::backward_data, why);
  if (!data) return std::nullopt;
  auto filter = choose_direction(ctx, g, ConvDirection::backward_filter, why);
  if (!filter) return std::nullopt;
  return ConvGraphs{std::move(*fwd), std::move(*data), std::move(*filter)};
}

}  // namespace ts::cuda

// What exchanging one gradient bucket compressed costs a worker (docs/model.md "Compressed
// exchanges"): the codec's encoding and decoding at the rates `trainscale calibrate` measured on
// a node (cluster file `calibration.compression`), the collective of the compressed bytes
// (fp16/bf16: MPI_Allreduce; qsgd, topk: MPI_Allgather; PowerSGD: two all-reduces of P and Q
// with dist.allreduce), and error feedback's passes over memory at the roofline. The byte
// counts are the trainer's (docs/compression.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/compression_options.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"
#include "perfmodel/layer_costs.h"

namespace ts::perf {

struct CompressedBucketCost {
  double encode = 0;      // this rank's encoding (PowerSGD: its products and orthogonalisation)
  double wire = 0;        // the collectives
  double decode = 0;      // decoding (and summing) what the collectives brought
  double feedback = 0;    // error feedback: adding the memory, keeping the residual
  double wire_bytes = 0;  // this rank's contribution (the run file's /compression/wire_bytes)
  double seconds() const { return encode + wire + decode + feedback; }
};

// The parameter a codec's cost follows beyond the bucket's size, and its rate records: topk's
// ratio (decoding follows k), PowerSGD's rank (its products); 0 for the others.
double codec_parameter(const CompressionOptions& options);

// The weight matrices of the model's conv and fc layers in the parameter arena, as PowerSGD
// sees them (train/run_setup.cpp weight_matrices_of): a conv's (oc, ic/g kh kw), an fc's (oc, ic).
std::vector<WeightMatrix> weight_matrices_of_work(const std::vector<LayerWork>& layers);

class CompressionModel {
 public:
  // `options.kind` != none. ConfigError naming the cluster file when its calibration has no rate
  // for the compressor. `run_allreduce`: dist.allreduce (PowerSGD's); `mpi`: the library's own
  // all-reduce and all-gather (the others'). Both must outlive the model.
  CompressionModel(const CompressionOptions& options, const ClusterSpec& cluster, const AllreduceModel& run_allreduce,
                   const AllreduceModel& mpi, const WorkerRate& rate, int64_t workers);

  // One bucket of `count` floats from arena offset `offset`; `tail`: the last, whose loss and
  // non-finite count then travel in an all-reduce of their own. 0 on one worker (nothing moves).
  CompressedBucketCost bucket(int64_t offset, int64_t count, bool tail) const;
  // "topk ratio 0.01, codec measured at ratio 0.01: encode 4.1 ns, decode 0.3 ns per element".
  std::string describe() const;

 private:
  void price_powersgd(int64_t offset, int64_t count, CompressedBucketCost& c) const;

  CompressionOptions options_;
  CodecRate rate_;
  const AllreduceModel& run_allreduce_;
  const AllreduceModel& mpi_;
  double bytes_per_s_ = 0;  // the worker's memory bandwidth
  int64_t workers_ = 1;
};

}  // namespace ts::perf

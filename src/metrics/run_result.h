// Everything one run produces, in memory, before metrics/run_file writes it as an HDF5 file
// of schema trainscale-run/1 (see docs/hdf5-schema.md). Only metrics/ opens HDF5 for writing.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace ts {

// The run file's schema version: the root attribute `schema` of every run file.
inline constexpr const char* kRunFileSchema = "trainscale-run/1";

enum class RunStatus { ok, diverged, failed };  // the root attribute `status`: "ok" | "diverged" | "failed"

// The run file's root attributes, by name (docs/hdf5-schema.md "/ (root group)"): what ran,
// where, with what. Strings unless noted.
struct RunRecord {
  std::string run_id, config_id, campaign;  // campaign "" for single runs
  RunStatus status = RunStatus::ok;
  std::string message;                      // why diverged / failed, else ""
  std::string warnings;                     // the run's warnings, one a line ("": none)
  std::string config_yaml;                  // attribute `config`: the resolved run config
  std::string version, git_sha;             // of the binary
  std::string start_time, end_time;         // ISO 8601 (UTC)
  std::string hosts;                        // unique host names of all ranks, comma-separated
  std::string rank_hosts;                   // every rank's host name in rank order, comma-separated
  std::string local_ranks;                  // every rank's index on its node in rank order, "0,1,0,1"
  int64_t world_size = 1;                   // int64
  std::string mpi_flavor, mpi_version;
  std::string mpi_tuning;                   // the MPI library's tuning environment, "NAME=value; ..."
  std::string dist_transport;               // how the exchange reaches the arenas: host | staged |
                                            // cuda_aware_mpi | nccl | device_sum (ArenaTransport)
  std::string loss_reads;                   // step | log (config/run_config.h LossReads); "": not
                                            // written (simulated runs read no losses)
  // The device facts of the backend (Backend::describe()).
  std::string backend;                      // "ref", "cpu", "cuda"
  std::string device;                       // "cpu", "cuda:0"
  std::string device_name;                  // CPU model or GPU name
  std::string device_generation;            // GPU generation, "none" on CPU backends
  std::string isa;                          // oneDNN ISA, "generic" (ref), "sm_90" (cuda)
  std::string device_libraries;             // "onednn 2.6.3, ..." (name version, comma-separated)
  int64_t device_memory_bytes = 0;          // int64
  std::string device_plans;                 // what planning chose per op (algorithms, workspace), one line each
  int64_t device_workspace_bytes = 0;       // int64: op workspace the backend held
  std::string cpu_model;                    // the host's CPU, whatever the device
  int64_t threads = 1;                      // int64: compute threads per worker
  std::string precision;                    // fp32 | bf16 | fp16 | tf32
  int64_t flush_denormals = 0;              // int64: 1 when the CPU threads flushed denormals to zero
  int64_t seed = 1;                         // int64
  // trainscale-sim (docs/model.md "Simulation"): 1 when the run was simulated (its timings are
  // simulated seconds), 0 when measured; a simulated run also has the cluster file it ran on
  // (YAML) and the platform and simulator settings (one line), both "" in measured runs.
  int64_t simulated = 0;                    // int64
  std::string sim_cluster, sim_platform;    // written only when simulated
  // Checkpoint and resume (docs/reliability.md): which attempt finished the run (1 for the
  // first; SLURM_RESTART_COUNT + 1 under Slurm) and the step of the checkpoint it resumed from
  // (0: it ran from the start).
  int64_t attempt = 1;                      // int64
  int64_t resumed_from_step = 0;            // int64
  // Wall clock of this attempt (Unix seconds, float64; NaN: not recorded): the set-up's start
  // and the training loop's start (MLPerf's init_start and run_start).
  double setup_start_unix = std::numeric_limits<double>::quiet_NaN();
  double train_start_unix = std::numeric_limits<double>::quiet_NaN();
  // The data set's split sizes (int64; 0: not recorded): MLPerf's train_samples, eval_samples.
  int64_t train_split_samples = 0, eval_split_samples = 0;
};

// /partition (docs/hdf5-schema.md): the shares of the global batch and the per-step compute
// and idle time of each rank, for runs with heterogeneous workers (dist.partition other than
// equal, or dist.emulate_slowdown). Written when `kind` is not empty.
struct PartitionRecord {
  std::string kind;                    // attribute: equal | static | measured | adaptive ("": no group)
  int64_t emulate_slowdown_rank = -1;  // attribute (int64): -1 when no rank is slowed down
  double emulate_slowdown_factor = 1;  // attribute (float64): 1 when none
  // Attributes, one item per rank in rank order: backend ("cpu,cuda"), compute threads
  // ("16,2") and the device's name ("AMD EPYC 7B13; NVIDIA H100 80GB HBM3").
  std::string rank_backends, rank_threads, rank_devices;
  std::vector<int64_t> shares;         // [S, R] samples rank r took in step s
  std::vector<float> compute;          // [S, R] seconds of forward + backward (+ emulated slowdown)
  std::vector<float> idle;             // [S, R] seconds before the all-reduce: slowest compute - own
  std::vector<int64_t> change_step;    // [C] the step from which new shares apply (the first: step 1)
  std::vector<int64_t> change_shares;  // [C, R] those shares
};

struct RunResult {
  RunRecord record;
  // /config: every resolved key flattened with dots, as text values ("0.05", "true", "ring").
  std::map<std::string, std::string> config;

  // /train/* [S]
  std::vector<int64_t> step, samples;
  std::vector<double> epoch, time;
  std::vector<float> loss, lr;
  // /train/wall_time [S] (rank 0's wall clock at each step's end, Unix seconds; NaN for the steps
  // of an earlier attempt of a resumed run); empty: not written.
  std::vector<double> wall_time;
  // /timing/<phase> [S, R], row-major (step-major): timing[phase][s * R + r]
  std::map<std::string, std::vector<float>> timing;
  PartitionRecord partition;  // /partition, heterogeneous workers only
  // /compression/<name> [S, R], row-major like timing (compressed runs only): wire_bytes.
  std::map<std::string, std::vector<float>> compression;
  // /bucket_timing (written when bucket_count > 0): each bucket's exchange in the recorded steps
  // (every bucket_stride-th; [N]), its start and end in seconds from the step's start on each
  // rank's clock, [N, R, B] row-major (NaN: no such bucket in that step on that rank).
  std::vector<int64_t> bucket_step;
  std::vector<float> bucket_start, bucket_end;
  int64_t bucket_count = 0, bucket_stride = 1;

  // /eval/* [E]
  std::vector<int64_t> eval_step;
  std::vector<double> eval_epoch, eval_time, eval_loss, eval_accuracy;
  // /eval/wall_time and /eval/seconds [E]: each evaluation's start (Unix seconds) and duration
  // (NaN for an earlier attempt's); empty: not written.
  std::vector<double> eval_wall_time, eval_seconds;
  // /checkpoints [C] (written when C > 0): each checkpoint of this attempt: the step it follows,
  // its start (Unix seconds), its seconds and the bytes of its files.
  std::vector<int64_t> checkpoint_step, checkpoint_bytes;
  std::vector<double> checkpoint_wall_time, checkpoint_seconds;

  // /summary attrs (float64, NaN where not applicable) and the diverged flag.
  std::map<std::string, double> summary;
  // /summary attribute params_sha256 (string): SHA-256 of the final parameters as IEEE-754
  // binary32 little-endian in arena order (core/sha256.h); "" leaves it out.
  std::string params_sha256;
  bool diverged = false;
  // /utilisation (written when `au` is not empty): per rank [R], the accelerator utilisation and
  // the data-wait share of the steps after warm-up (metrics/utilisation.h), and the threshold
  // they were judged against (metrics.au_threshold; NaN: none).
  std::vector<double> au, data_wait_share;
  double au_threshold = std::numeric_limits<double>::quiet_NaN();

  // /model
  std::string model_name;
  int64_t model_parameters = 0;
  int64_t model_flops_per_sample = 0;
  struct LayerRow {
    std::string name, kind, descriptor;
    int64_t parameters = 0, flops = 0;
  };
  std::vector<LayerRow> layers;

  // /memory attrs (int64 bytes; docs/hdf5-schema.md): the memory check's estimate by part
  // (estimate_bytes, process_bytes, ...), the bound it was checked against (limit_bytes, 0: none
  // found) and the measured peak (peak_rss_bytes), all of rank 0; written when not empty.
  std::map<std::string, int64_t> memory;
  std::string memory_limit_source;  // /memory attr limit_source

  // /io (docs/hdf5-schema.md "/io"): the input pipeline's storage reads per step and rank
  // ([S, R] step-major, like /timing; -1 / NaN for steps of an earlier attempt of a resumed run)
  // and how the data was prepared (attributes: storage, file_system, stage, cache, ...).
  // Written when any part is set.
  std::vector<int64_t> read_bytes;
  std::vector<float> read_seconds;
  std::map<std::string, std::string> io_text;   // string attributes of /io
  std::map<std::string, double> io_numbers;     // float64 attributes of /io
  int64_t blob_retries = 0;                     // retried blob requests of every rank's process
  // /async_ps (dist.strategy async_ps; written when workers > 0): per worker, how stale its
  // applied gradients were (counts, [workers, staleness + 1] row-major) and the seconds it spent
  // waiting: the servers holding its replies for the bound, and blocked on push + pull in all.
  struct AsyncPsRecord {
    int64_t workers = 0, servers = 0, staleness = 0;
    std::vector<int64_t> staleness_histogram;
    std::vector<int64_t> max_staleness;  // per worker: its stalest applied gradient (unclamped)
    std::vector<double> bound_wait_s, pull_wait_s;
  };
  AsyncPsRecord async_ps;
};

// Writes `result` to `path` atomically (core/file_io.h AtomicFile: "<path>.tmp-<pid>", fsync,
// rename, directory fsync). Throws RuntimeError (naming the file and the failing HDF5 call) on
// failure. Throws before creating anything if the result's arrays disagree in length or the
// output directory does not exist or is not writable (the message names the directory).
void write_run_file(const std::string& path, const RunResult& result);

}  // namespace ts

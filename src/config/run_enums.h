// The enum-like keys of the run configuration (config/run_config.h) and their names as
// configs and run files write them: what a phase's own options (train/) carry without the
// whole config.
#pragma once

namespace ts {

enum class BackendKind { ref, cpu, cuda };
enum class LrScheduleKind { constant, step, cosine };
enum class LrScale { none, linear };  // linear: Goyal et al., lr * global_batch / base_batch
// Loss scaling of mixed-precision training (train/loss_scaler.h): auto = dynamic for fp16, off
// otherwise; static keeps loss_scale.init; dynamic halves on an overflow (the step is skipped)
// and doubles after growth_interval good steps.
enum class LossScaleMode { auto_, off, static_, dynamic };
// intel and mvapich2 are not linked here: trainscale run refuses them (its MPI library is another),
// trainscale-sim simulates them with SMPI's collective selectors (docs/model.md "Simulation").
enum class MpiFlavor { any, openmpi, mpich, intel, mvapich2 };
// When the host reads a step's loss (loss_reads; train/loss_ledger.h): step reads it in every
// step; log leaves it on the device's queue and reads the held losses every log_every steps
// (and before evaluations, checkpoints and the end), so the step never waits for its own
// forward. auto (the key unset) is log on a single rank of sync on a device the host cannot
// address (cuda), step otherwise.
enum class LossReads { auto_, step, log };
// The GPU a run expects (checked against the device when it starts): none (a CPU backend), a
// generation of backend/gpu_generation.h, or any GPU. Unset, it is `any` for backend cuda and
// `none` otherwise.
enum class GpuGeneration { none, k80, p40, p100, v100, a100, h100, h200, any };

// Names of the enum values, as written in configs and run files.
const char* backend_kind_name(BackendKind kind);
const char* lr_schedule_kind_name(LrScheduleKind kind);
const char* lr_scale_name(LrScale scale);
const char* loss_scale_mode_name(LossScaleMode mode);
const char* mpi_flavor_name(MpiFlavor flavor);
const char* loss_reads_name(LossReads reads);
const char* gpu_generation_name(GpuGeneration generation);
// True for backends that compute on a GPU (cuda); ref and cpu compute on the CPU.
bool backend_has_gpu(BackendKind kind);

}  // namespace ts

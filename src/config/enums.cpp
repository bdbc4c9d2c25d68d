// Enum values and names of the run config (see enums.h and run_config.h).
#include "config/enums.h"

namespace ts {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::ref: return "ref";
    case BackendKind::cpu: return "cpu";
    case BackendKind::cuda: return "cuda";
  }
  return "?";
}

const char* lr_schedule_kind_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::constant: return "constant";
    case LrScheduleKind::step: return "step";
    case LrScheduleKind::cosine: return "cosine";
  }
  return "?";
}

const char* lr_scale_name(LrScale scale) { return scale == LrScale::linear ? "linear" : "none"; }
const char* loss_scale_mode_name(LossScaleMode mode) {
  switch (mode) {
    case LossScaleMode::auto_: return "auto";
    case LossScaleMode::off: return "off";
    case LossScaleMode::static_: return "static";
    case LossScaleMode::dynamic: return "dynamic";
  }
  return "?";
}

const char* mpi_flavor_name(MpiFlavor flavor) {
  switch (flavor) {
    case MpiFlavor::any: return "any";
    case MpiFlavor::openmpi: return "openmpi";
    case MpiFlavor::mpich: return "mpich";
  }
  return "?";
}

std::vector<BackendKind> all_backend_kinds() { return {BackendKind::ref, BackendKind::cpu, BackendKind::cuda}; }
std::vector<Precision> all_precisions() { return {Precision::fp32, Precision::bf16, Precision::fp16, Precision::tf32}; }
std::vector<LrScheduleKind> all_lr_schedule_kinds() {
  return {LrScheduleKind::constant, LrScheduleKind::step, LrScheduleKind::cosine};
}
std::vector<LrScale> all_lr_scales() { return {LrScale::none, LrScale::linear}; }
std::vector<LossScaleMode> all_loss_scale_modes() {
  return {LossScaleMode::auto_, LossScaleMode::off, LossScaleMode::static_, LossScaleMode::dynamic};
}
std::vector<MpiFlavor> all_mpi_flavors() { return {MpiFlavor::any, MpiFlavor::openmpi, MpiFlavor::mpich}; }

}  // namespace ts

// Enum values and names of the run config (see enums.h and run_config.h).
#include "config/enums.h"

#include "core/enum_names.h"

namespace ts {
namespace {

using G = GpuGeneration;
constexpr EnumName<BackendKind> kBackendKinds[] = {
    {BackendKind::ref, "ref"}, {BackendKind::cpu, "cpu"}, {BackendKind::cuda, "cuda"}};
constexpr EnumName<LrScheduleKind> kLrScheduleKinds[] = {
    {LrScheduleKind::constant, "constant"}, {LrScheduleKind::step, "step"}, {LrScheduleKind::cosine, "cosine"}};
constexpr EnumName<LrScale> kLrScales[] = {{LrScale::none, "none"}, {LrScale::linear, "linear"}};
constexpr EnumName<LossScaleMode> kLossScaleModes[] = {{LossScaleMode::auto_, "auto"},
                                                       {LossScaleMode::off, "off"},
                                                       {LossScaleMode::static_, "static"},
                                                       {LossScaleMode::dynamic, "dynamic"}};
constexpr EnumName<LossReads> kLossReads[] = {
    {LossReads::auto_, "auto"}, {LossReads::step, "step"}, {LossReads::log, "log"}};
constexpr EnumName<MpiFlavor> kMpiFlavors[] = {{MpiFlavor::any, "any"},
                                               {MpiFlavor::openmpi, "openmpi"},
                                               {MpiFlavor::mpich, "mpich"},
                                               {MpiFlavor::intel, "intel"},
                                               {MpiFlavor::mvapich2, "mvapich2"}};
constexpr EnumName<GpuGeneration> kGpuGenerations[] = {
    {G::none, "none"}, {G::k80, "k80"},   {G::p40, "p40"},   {G::p100, "p100"}, {G::v100, "v100"},
    {G::a100, "a100"}, {G::h100, "h100"}, {G::h200, "h200"}, {G::any, "any"}};

}  // namespace

const char* backend_kind_name(BackendKind kind) { return name_in(kBackendKinds, kind); }
const char* lr_schedule_kind_name(LrScheduleKind kind) { return name_in(kLrScheduleKinds, kind); }
const char* lr_scale_name(LrScale scale) { return name_in(kLrScales, scale); }
const char* loss_scale_mode_name(LossScaleMode mode) { return name_in(kLossScaleModes, mode); }
const char* loss_reads_name(LossReads reads) { return name_in(kLossReads, reads); }
const char* mpi_flavor_name(MpiFlavor flavor) { return name_in(kMpiFlavors, flavor); }
const char* gpu_generation_name(GpuGeneration generation) { return name_in(kGpuGenerations, generation); }

bool backend_has_gpu(BackendKind kind) { return kind == BackendKind::cuda; }

std::vector<BackendKind> all_backend_kinds() { return values_in(kBackendKinds); }
std::vector<Precision> all_precisions() { return {Precision::fp32, Precision::bf16, Precision::fp16, Precision::tf32}; }
std::vector<LrScheduleKind> all_lr_schedule_kinds() { return values_in(kLrScheduleKinds); }
std::vector<LrScale> all_lr_scales() { return values_in(kLrScales); }
std::vector<LossScaleMode> all_loss_scale_modes() { return values_in(kLossScaleModes); }
std::vector<LossReads> all_loss_reads() { return {LossReads::step, LossReads::log}; }  // what a config may give
std::vector<MpiFlavor> all_mpi_flavors() { return values_in(kMpiFlavors); }
std::vector<GpuGeneration> all_gpu_generations() { return values_in(kGpuGenerations); }

}  // namespace ts

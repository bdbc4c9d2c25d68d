// Progress lines (see progress.h).
#include "train/progress.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <vector>

#include "core/build_info.h"
#include "core/strings.h"
#include "train/summary.h"

namespace ts {

void log_run_start(std::ostream& log, const std::string& run_id, const RunConfig& r, const RunSetup& s, int world) {
  const bool weight_avg = r.dist.strategy == DistStrategy::weight_avg;
  log << "trainscale " << TRAINSCALE_VERSION << " run " << run_id << ": model " << r.model << " ("
      << s.net->param_count() << " parameters), " << r.dataset.name << " " << s.data->train_count << "/"
      << s.data->test_count << " samples, " << world << " worker(s) x batch "
      << (s.shares->active() ? std::string(partition_kind_name(r.dist.partition)) + " shares " + shares_text(s.shares->shares())
                             : std::to_string(s.plan.batch))
      << (r.dist.emulate_slowdown_rank >= 0 ? " (rank " + std::to_string(r.dist.emulate_slowdown_rank) + " slowed down x"
                                            : std::string());
  if (r.dist.emulate_slowdown_rank >= 0) log << r.dist.emulate_slowdown_factor << ")";
  log << ", "
      << s.plan.total_steps << " steps (" << s.plan.steps_per_epoch << "/epoch), backend "
      << backend_kind_name(r.backend) << " " << precision_name(r.precision) << ", " << r.threads
      << " thread(s), dist " << dist_strategy_name(r.dist.strategy)
      << (weight_avg ? " period " + std::to_string(r.dist.period) : std::string()) << " "
      << allreduce_algorithm_name(r.dist.allreduce) << (r.dist.overlap && !weight_avg ? " overlap" : "")
      << (r.dist.compression.enabled() ? std::string(" compression ") + compression_kind_name(r.dist.compression.kind) +
                                             (r.dist.compression.error_feedback_on() ? " + error feedback" : "")
                                       : std::string())
      << " ("
      << s.exchange->buckets().size() << " bucket(s), transport " << arena_transport_name(s.exchange->transport())
      << ")\n";
  const InputPreparation& in = s.data->prepared;
  log << "data: " << r.dataset.format << " on storage " << r.dataset.storage
      << (in.text.count("file_system") ? " (" + in.text.at("file_system") + ")" : std::string()) << ", stage "
      << r.dataset.stage << (in.text.count("stage_result") ? " (" + in.text.at("stage_result") + ")" : std::string())
      << ", cache " << r.dataset.cache << " (" << (in.text.count("cache_result") ? in.text.at("cache_result") : "") << ")\n";
  for (const std::string& warning : in.warnings) log << "warning: " << warning << "\n";
  if (s.memory.device.applies)
    log << "device memory: estimate " << s.memory.device.text() << "; " << s.memory_bound.device.source << "\n";
  log.flush();
}

void warn(std::ostream& log, RunRecording& rec, bool root, const std::string& text) {
  if (!root) return;
  rec.warnings.push_back(text);
  log << "warning: " << text << "\n";
  log.flush();
}

std::string warmup_warning(const ResolvedConfig& cfg, const RunPlan& plan, double last_lr) {
  const double epochs = cfg.run.lr_schedule.warmup_epochs;
  const auto warmup_steps = static_cast<int64_t>(std::llround(epochs * static_cast<double>(plan.steps_per_epoch)));
  if (warmup_steps <= plan.total_steps) return "";
  const std::string fits =
      format_number("%.4g", static_cast<double>(plan.total_steps) / static_cast<double>(plan.steps_per_epoch));
  const std::string lr = format_number("%.4g", last_lr);
  return cfg.locate("lr_schedule.warmup_epochs") + ": " + cfg.flat.at("lr_schedule.warmup_epochs") + " epochs are " +
         std::to_string(warmup_steps) + " warm-up steps (" + std::to_string(plan.steps_per_epoch) +
         " steps per epoch), longer than this run's " + std::to_string(plan.total_steps) +
         " steps: the LR is still rising at the last step (" + lr +
         "), so the run measures the warm-up only; shorten lr_schedule.warmup_epochs (this run's steps are " + fits +
         " epochs) or lengthen the run";
}

void log_progress(std::ostream& log, const RunRecording& rec, const RunPlan& plan, double loss, bool exchanged) {
  const std::vector<float>& steps_s = rec.seconds[static_cast<size_t>(Phase::step)];
  const size_t n = steps_s.size();  // the median of the last 50 steps
  const std::vector<double> recent(steps_s.end() - static_cast<long>(std::min<size_t>(n, 50)), steps_s.end());
  const double med = percentile(recent, 50);
  const int64_t step = rec.step.back();
  log << std::fixed << "step " << step << "/" << plan.total_steps << " epoch " << std::setprecision(2)
      << rec.epoch.back() << " loss " << std::setprecision(4) << loss << (exchanged ? "" : " (rank 0)") << " lr "
      << std::setprecision(5) << rec.lr.back() << " img/s " << std::setprecision(1)
      << static_cast<double>(plan.global_batch) / med << " eta "
      << duration_text(med * static_cast<double>(plan.total_steps - step)) << "\n";
  log.flush();
}

void log_eval(std::ostream& log, int64_t step, double epoch, double loss, double accuracy, double train_clock) {
  log << std::fixed << std::setprecision(4) << "eval  step " << step << " epoch " << std::setprecision(2) << epoch
      << " test_loss " << std::setprecision(4) << loss << " accuracy " << accuracy << " (train time "
      << std::setprecision(1) << train_clock << " s)\n";
  log.flush();
}

void log_summary(std::ostream& log, const RunRecording& rec, const std::map<std::string, double>& s,
                 double target_accuracy, const std::string& run_file, const std::string& params_sha256) {
  log << std::fixed << std::setprecision(1) << "summary: " << (rec.diverged ? "DIVERGED" : "ok") << ", "
      << rec.steps() << " steps in " << rec.train_clock << " s training time, " << s.at("images_per_s")
      << " img/s (median after " << static_cast<int64_t>(s.at("warmup_steps")) << " warm-up steps), best accuracy "
      << std::setprecision(4) << s.at("best_accuracy") << ", time to " << target_accuracy << ": "
      << (std::isnan(s.at("time_to_target")) ? std::string("never") : duration_text(s.at("time_to_target")))
      << "\nrun file: " << run_file << "\n";
  if (!params_sha256.empty()) log << "params_sha256: " << params_sha256 << "\n";
  log.flush();
}

}  // namespace ts

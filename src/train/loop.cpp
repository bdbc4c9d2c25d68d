// The timed loop (see loop.h).
#include "train/loop.h"

#include <cmath>
#include <ostream>

#include "core/strings.h"
#include "core/timer.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/loss_ledger.h"
#include "train/loss_watch.h"
#include "train/progress.h"
#include "train/run_setup.h"
#include "train/train_step.h"

namespace ts {
namespace {

void record_step(RunRecording& rec, const StepResult& res, int64_t step, const RunPlan& plan, double lr) {
  rec.train_clock += at(res.seconds, Phase::step);
  rec.step.push_back(step);
  rec.epoch.push_back(static_cast<double>(step) / static_cast<double>(plan.steps_per_epoch));
  rec.samples.push_back(step * plan.global_batch);
  rec.time.push_back(rec.train_clock);
  rec.step_wall.push_back(unix_seconds());
  rec.lr.push_back(static_cast<float>(lr));
  rec.local_loss.push_back(res.local_loss);
  for (size_t p = 0; p < kPhaseCount; ++p) rec.seconds[p].push_back(static_cast<float>(res.seconds[p]));
  rec.share.push_back(static_cast<float>(res.batch));
  rec.compute.push_back(static_cast<float>(res.compute));
  rec.read_bytes.push_back(res.reads.bytes);
  rec.read_seconds.push_back(static_cast<float>(res.reads.seconds));
  rec.wire_bytes.push_back(static_cast<float>(res.verdict.times.wire_bytes));
  if ((step - 1) % rec.bucket_stride == 0) {
    rec.bucket_step.push_back(step);
    rec.bucket_spans.push_back(res.buckets);
  }
}

std::string divergence_message(const StepVerdict& v, int64_t step) {
  const std::string at_step = std::to_string(step);
  if (std::isnan(v.loss)) return "loss became NaN at step " + at_step;
  if (std::isinf(v.loss)) return "loss became Inf at step " + at_step;
  return "a worker's loss became NaN/Inf by step " + at_step + " (weight_avg checks at each weight average)";
}

// loss_reads: log: reads the held losses into the recording. False, with the run marked
// diverged, when one of them was not finite.
bool settle_losses(LossLedger* ledger, RunRecording& rec, int64_t step, bool root, std::ostream& log) {
  if (!ledger) return true;
  const LossLedger::Nonfinite bad = ledger->settle(rec);
  if (bad.record < 0) return true;
  rec.diverged = true;
  rec.message = std::string(bad.combined ? "the mean loss over ranks became " : "loss became ") +
                (std::isnan(bad.loss) ? "NaN" : "Inf") + " at step " +
                std::to_string(rec.step.at(static_cast<size_t>(bad.record))) + " (read at step " +
                std::to_string(step) + ": loss_reads log reads the losses every log_every steps)";
  if (root) log << "diverged: " << rec.message << "; stopping\n";
  return false;
}

// The loss of a progress line through the loss watch (train/loss_watch.h): its warnings (printed
// and kept by rank 0), and true, with the run marked diverged, when the loss passed
// diverge.loss_above_factor. `combined`: the loss is the same on every rank (the ranks' mean, or
// one rank's in a world of one), so every rank decides alike.
bool loss_passed_bound(LossWatch& watch, RunRecording& rec, int64_t step, double loss, bool combined, bool root,
                       std::ostream& log) {
  const LossWatch::Verdict v = watch.observe(step, loss, combined);
  for (const std::string& warning : v.warnings) warn(log, rec, root, warning);
  if (v.diverged.empty()) return false;
  rec.diverged = true;
  rec.message = v.diverged;
  if (root) log << "diverged: " << rec.message << "; stopping\n";
  return true;
}

// Averages the non-trainable state (BN running statistics are per worker during training),
// evaluates, records; returns the device memory used at the evaluation batch (0: a host backend).
int64_t evaluate_now(RunRecording& rec, ExchangeStrategy& exchange, Net& net, Loader& eval_loader, Communicator& comm,
                     std::ostream& log) {
  const double wall = unix_seconds();
  exchange.average_state();
  const EvalResult e = evaluate(net, eval_loader, net.batch(), comm);  // back to this rank's share
  rec.eval_step.push_back(rec.step.back());
  rec.eval_epoch.push_back(rec.epoch.back());
  rec.eval_time.push_back(rec.train_clock);
  rec.eval_loss.push_back(e.loss);
  rec.eval_accuracy.push_back(e.accuracy);
  rec.eval_wall.push_back(wall);
  rec.eval_seconds.push_back(unix_seconds() - wall);
  if (comm.rank() == 0) log_eval(log, rec.step.back(), rec.epoch.back(), e.loss, e.accuracy, rec.train_clock);
  return e.device_used;
}

// Between step `step` and the next: a checkpoint when one is due, and the stop of a preemption.
// True when the loop must stop.
// With loss_reads: log the held losses are read first; a non-finite one stops the loop there,
// before a checkpoint could keep the diverged model.
bool between_steps(int64_t step, bool sync_point, StepBoundary& boundary, RunRecording& rec, RunSetup& s,
                   Communicator& comm, std::ostream& log, const CheckpointTarget* checkpoints, LossLedger* ledger) {
  const BoundaryDecision d = boundary.after_step(step, sync_point, comm, s.message_boundary);
  if ((d.checkpoint || d.preempt_signal != 0) && !settle_losses(ledger, rec, step, comm.rank() == 0, log)) return true;
  if (d.checkpoint && checkpoints) {
    s.scaler->read_back();  // a scaler on the device: its state as of this step
    const std::string path = save_checkpoint(*checkpoints, step, rec, s, comm);
    boundary.checkpoint_written();
    if (comm.rank() == 0)
      log << "checkpoint: step " << step << " -> " << path << " ("
          << format_number("%.3f", rec.checkpoint_duration.back()) << " s)\n";
  }
  rec.preempted_by = d.preempt_signal;
  return d.preempt_signal != 0;
}

}  // namespace

void run_loop(RunSetup& s, Communicator& comm, std::ostream& log, RunRecording& rec,
              const CheckpointTarget* checkpoints) {
  const RunPlan& plan = s.plan;
  const LoopOptions& o = s.loop;
  const bool root = comm.rank() == 0;
  StepBoundary boundary(o.checkpoints);
  // What the steps do is decided here, once: the step tests these members only.
  LossScaler* scaler = s.scaler->enabled() ? s.scaler.get() : nullptr;
  const bool shares = s.shares->active();
  TrainState state{.net = *s.net, .sgd = *s.sgd, .exchange = *s.exchange, .loader = *s.data->train_loader,
                   .scaler = scaler, .staged = s.staged.get(), .step = rec.steps(),
                   .global_batch = shares ? plan.global_batch : 0, .world = shares ? comm.size() : 1,
                   .slowdown = o.slowdown, .wait_for_device = s.waits_for_device,
                   .defer_loss = s.loss_reads == LossReads::log};
  std::unique_ptr<LossLedger> ledger = state.defer_loss ? std::make_unique<LossLedger>(*s.net, s.device_losses) : nullptr;
  // loss_reads: log: the overflow check of loss scaling is decided on the device too.
  if (state.defer_loss && scaler && !scaler->on_device()) scaler->keep_on_device(*s.backend);
  LossWatch watch(o.diverge_loss_above_factor);
  const int64_t first_step = rec.steps() + 1;
  rec.bucket_stride = bucket_stride_for(plan.total_steps, static_cast<int64_t>(s.exchange->buckets().size()), comm.size());
  for (int64_t step = first_step; step <= plan.total_steps; ++step) {
    const double lr = s.lr->at(step - 1);
    const bool last = step == plan.total_steps;
    const bool eval_now = plan.eval_period > 0 && (step % plan.eval_period == 0 || last);
    // weight_avg averages every `period` steps, and before evaluations and at the end, so that
    // the evaluated and final model is the averaged one.
    const bool average_now = step % plan.average_period == 0 || last || eval_now;
    const StepResult res = train_step(state, lr, average_now);
    record_step(rec, res, step, plan, lr);
    if (s.memory.device.applies && (step == first_step || step % o.log_every == 0 || last))
      s.note_device_memory(s.backend->device_memory().used);
    if (res.verdict.diverged) {
      rec.diverged = true;
      rec.message = divergence_message(res.verdict, step);
      if (root) log << "diverged: " << rec.message << "; stopping\n";
      break;
    }
    const bool log_now = step % o.log_every == 0 || last;
    if (ledger) {
      ledger->hold(rec.local_loss.size() - 1, res.loss_id, res.verdict.combined_id);
      if ((log_now || eval_now || ledger->full()) && !settle_losses(ledger.get(), rec, step, root, log)) break;
    }
    const size_t changes = s.shares->changes().size();
    s.shares->after_step(step, res.compute, res.batch, *s.data->train_loader, o.prefetch, s.staged ? 1 : 0,
                         comm);
    if (root && s.shares->changes().size() > changes)
      log << "shares: " << shares_text(s.shares->shares()) << " from step " << s.shares->changes().back().step << "\n";
    if (!ledger) watch.start(step, res.verdict.loss, res.verdict.exchanged || comm.size() == 1);
    const double logged_loss = ledger ? ledger->last_loss() : res.verdict.loss;
    const bool combined = ledger ? ledger->last_combined() : res.verdict.exchanged;
    if (root && log_now) log_progress(log, rec, plan, logged_loss, combined);
    if (log_now && loss_passed_bound(watch, rec, step, logged_loss, combined || comm.size() == 1, root, log)) break;
    if (eval_now) s.note_device_memory(evaluate_now(rec, *s.exchange, *s.net, *s.data->eval_loader, comm, log));
    // The ranks synchronise anyway where the strategy averages (every step but with weight_avg).
    if (!last && between_steps(step, average_now, boundary, rec, s, comm, log, checkpoints, ledger.get())) break;
  }
  s.scaler->read_back();  // a scaler on the device: the summary's skipped steps and final scale
}

}  // namespace ts

// Retries of blob storage requests (see blob_retry.h).
#include "data/blob_retry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace ts {

bool is_retryable(const HttpResponse& response) {
  return (response.status == 0 && !response.transport_permanent) || response.status >= 500 || response.status == 429 || response.status == 408;
}

double backoff_delay(const RetryPolicy& policy, int retry) {
  return std::min(policy.max_delay_s, policy.first_delay_s * std::pow(2.0, std::max(0, retry - 1)));
}

std::string response_summary(const HttpResponse& response) {
  if (response.status == 0) return "no response (" + response.transport_error + ")";
  return "HTTP " + std::to_string(response.status);
}

double request_deadline_s(const RetryPolicy& policy, const HttpRequest& request) {
  int64_t bytes = 0;
  if (request.method == "PUT") bytes = request.upload_bytes;
  else if (request.method == "GET") bytes = request.body_dst ? request.body_capacity : kUnsizedBodyBytes;
  return policy.deadline_base_s + static_cast<double>(bytes) / policy.min_bytes_per_s;
}

HttpResponse perform_with_retries(const HttpTransport& transport, HttpRequest request, const RetryPolicy& policy,
                                  const std::string& shown_url, std::atomic<int64_t>& retries,
                                  const std::function<void(HttpRequest&)>& prepare) {
  const int attempts = std::max(1, policy.attempts);
  request.deadline_s = request_deadline_s(policy, request);
  for (int attempt = 1;; ++attempt) {
    if (prepare) prepare(request);
    HttpResponse response = transport.perform(request);
    if (!is_retryable(response) || attempt == attempts) return response;
    const double delay = backoff_delay(policy, attempt);
    retries.fetch_add(1, std::memory_order_relaxed);
    // One line per retry: a flaky store shows in the job log, not only in a count.
    std::fprintf(stderr, "blob storage: %s %s: %s; retry %d of %d in %.2f s\n", request.method.c_str(),
                 shown_url.c_str(), response_summary(response).c_str(), attempt, attempts - 1, delay);
    if (policy.sleep) {
      policy.sleep(delay);
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    }
  }
}

}  // namespace ts

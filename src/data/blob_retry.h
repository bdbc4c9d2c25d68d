// When blob storage tries a request again: transport failures (refused, reset, timed out), 5xx
// and 429/408 responses are retried with exponential backoff up to a bounded number of
// attempts; every other response (2xx, 3xx, 4xx) is final. Every retry is counted and named on
// stderr (the URL, the status, the attempt), never with a request header.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "data/http_transport.h"

namespace ts {

struct RetryPolicy {
  int attempts = 5;             // tries in all (1: no retry)
  double first_delay_s = 0.25;  // the wait before the first retry; doubled each time ...
  double max_delay_s = 4.0;     // ... up to this
  // Every request's deadline (HttpRequest::deadline_s): deadline_base_s plus its bytes at
  // min_bytes_per_s (dataset.blob_deadline_s, dataset.blob_min_kib_s).
  double deadline_base_s = 30;
  double min_bytes_per_s = 16 * 1024;
  // Waits `seconds`; tests pass one that only records.
  std::function<void(double seconds)> sleep;
};

// True for a response worth trying again: no response at all (unless the transport calls it
// permanent: an untrusted TLS certificate), 5xx, 429 (throttled), 408.
bool is_retryable(const HttpResponse& response);
// The wait before retry number `retry` (1, 2, ...): first_delay_s * 2^(retry-1), capped.
double backoff_delay(const RetryPolicy& policy, int retry);

// The bytes a request moves (a ranged GET's capacity, a PUT's body; a listing or error document,
// of unknown size, counts as kUnsizedBodyBytes; HEAD and DELETE none) and so its deadline.
constexpr int64_t kUnsizedBodyBytes = int64_t{1} << 20;
double request_deadline_s(const RetryPolicy& policy, const HttpRequest& request);

// Performs `request` until its response is final or policy.attempts are spent, and returns the
// last response (the caller judges its status). `shown_url` names the request in the retry
// lines on stderr (an s3:// URL, never a signed one); each retry adds 1 to `retries`.
// `prepare` (may be empty) is called before every attempt: S3 requests are signed afresh.
// Each attempt gets request_deadline_s; one past it is a transport failure, retried.
HttpResponse perform_with_retries(const HttpTransport& transport, HttpRequest request, const RetryPolicy& policy,
                                  const std::string& shown_url, std::atomic<int64_t>& retries,
                                  const std::function<void(HttpRequest&)>& prepare = {});

// "HTTP 503" or "no response (Connection refused)": what a response was, for messages.
std::string response_summary(const HttpResponse& response);

}  // namespace ts

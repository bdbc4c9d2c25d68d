// HttpTransport over libcurl (see http_transport.h). Thread safety: curl_global_init once
// (std::call_once) and one easy handle per thread, never shared; CURLOPT_NOSIGNAL because
// loader threads must not take SIGALRM from name resolution timeouts.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "core/strings.h"
#include "data/http_transport.h"

namespace ts {

std::string HttpResponse::header(const std::string& lower_case_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_case_name) return value;
  return "";
}

namespace {

constexpr size_t kMaxKeptBody = 64u << 20;  // listings and error documents; larger is an error

// The calling thread's easy handle, created on first use and cleaned up when the thread ends.
struct ThreadHandle {
  CURL* handle = nullptr;
  ~ThreadHandle() {
    if (handle) curl_easy_cleanup(handle);
  }
};

CURL* thread_handle() {
  static std::once_flag global_init;
  std::call_once(global_init, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw RuntimeError("libcurl: curl_global_init failed");
  });
  thread_local ThreadHandle mine;
  if (!mine.handle) mine.handle = curl_easy_init();
  if (!mine.handle) throw RuntimeError("libcurl: curl_easy_init failed (out of memory?)");
  curl_easy_reset(mine.handle);
  return mine.handle;
}

struct Transfer {
  CURL* curl;
  const HttpRequest* request;
  HttpResponse* response;
};

// An error status's body is an error document for the response, never data for body_dst.
bool error_status(CURL* curl) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status >= 300;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  HttpResponse& r = *t->response;
  if (t->request->body_dst && !error_status(t->curl)) {
    const int64_t room = std::max<int64_t>(0, t->request->body_capacity - r.body_bytes);
    const auto copied = static_cast<int64_t>(std::min<size_t>(bytes, static_cast<size_t>(room)));
    std::memcpy(t->request->body_dst + r.body_bytes, data, static_cast<size_t>(copied));
    if (copied < static_cast<int64_t>(bytes)) r.body_overflow = true;
  } else {
    if (r.body.size() + bytes > kMaxKeptBody) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    r.body.append(data, bytes);
  }
  r.body_bytes += static_cast<int64_t>(bytes);
  return bytes;
}

// PUT bodies: the request's upload buffer, handed to libcurl piece by piece.
struct Upload {
  const char* data = nullptr;
  int64_t left = 0;
};

size_t on_upload(char* buffer, size_t size, size_t count, void* user) {
  auto* u = static_cast<Upload*>(user);
  const size_t bytes = std::min<size_t>(size * count, static_cast<size_t>(u->left));
  std::memcpy(buffer, u->data, bytes);
  u->data += bytes;
  u->left -= static_cast<int64_t>(bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) t->response->headers.clear();  // a new response (after 100 Continue)
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    t->response->headers.emplace_back(name, trim(line.substr(colon + 1)));
  }
  return size * count;
}

// "30.5": a deadline in messages.
std::string seconds_text(double seconds) { return format_number("%.1f", seconds); }

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport() : ca_(ca_bundle_from_environment()) {}

  HttpResponse perform(const HttpRequest& request) const override {
    CURL* curl = thread_handle();
    HttpResponse response;
    Transfer transfer{curl, &request, &response};
    char error[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = nullptr;
    for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOBODY, request.method == "HEAD" ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // less than a byte a second ...
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 30L);  // ... for 30 s: a stalled server
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(std::max(0.0, request.deadline_s) * 1000)));
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, nullptr);  // byte ranges of the stored object, never re-encoded
    if (!ca_.path.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_.path.c_str());
    // The handle is reused by this thread's next request: every method sets all three.
    Upload upload{request.upload, request.upload_bytes};
    const bool put = request.method == "PUT";
    curl_easy_setopt(curl, CURLOPT_UPLOAD, put ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method == "DELETE" ? "DELETE" : nullptr);
    if (put) {
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_upload);
      curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.upload_bytes));
    }
    const CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
      response.status = 0;
      response.transport_error = error[0] ? std::string(error) : curl_easy_strerror(rc);
      if (rc == CURLE_OPERATION_TIMEDOUT && request.deadline_s > 0)
        response.transport_error = "not done within the request's deadline of " + seconds_text(request.deadline_s) +
                                   " s, dataset.blob_deadline_s + its bytes at dataset.blob_min_kib_s (" +
                                   response.transport_error + ")";
      explain_tls_failure(rc, response);
      return response;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    return response;
  }

 private:
  // Certificate failures are the user's to fix (trust the server's CA), not the network's.
  void explain_tls_failure(CURLcode rc, HttpResponse& response) const {
    if (rc == CURLE_PEER_FAILED_VERIFICATION) {
      response.transport_permanent = true;
      response.transport_error += "; the server's TLS certificate is not trusted" +
                                  (ca_.path.empty() ? std::string(" by the system's CA certificates")
                                                    : " by " + ca_.path + " (" + ca_.variable + ")") +
                                  ": set AWS_CA_BUNDLE to the PEM file of the CA that signed it";
    } else if (rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM) {
      response.transport_permanent = true;
      response.transport_error += "; check the CA bundle " +
                                  (ca_.path.empty() ? std::string("of the system") : ca_.path + " (" + ca_.variable + ")") +
                                  ": it must be a readable PEM file of CA certificates";
    }
  }

  CaBundle ca_;
};

}  // namespace

CaBundle ca_bundle_from_environment() {
  for (const char* variable : {"AWS_CA_BUNDLE", "CURL_CA_BUNDLE"})
    if (const char* path = std::getenv(variable); path && *path) return {path, variable};
  return {};
}

std::shared_ptr<const HttpTransport> curl_transport() {
  static const auto transport = std::make_shared<const CurlTransport>();
  return transport;
}

}  // namespace ts

// One HTTP request and its response, behind an interface: blob storage (blob_storage.h) talks
// to servers through libcurl (curl_transport.cpp) and its tests through a fake that serves
// bytes from memory and fails on cue, so that retries and checks are tested without a network.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ts {

struct HttpRequest {
  std::string method = "GET";        // "GET", "HEAD", "PUT" (upload below) or "DELETE"
  std::string url;                   // percent-encoded, as sent
  std::vector<std::string> headers;  // "Name: value" lines
  // GET: the body is written here (at most body_capacity bytes; more sets body_overflow); null:
  // the body is kept in HttpResponse::body (listings, error documents).
  char* body_dst = nullptr;
  int64_t body_capacity = 0;
  // PUT: the request body, sent as it is (Content-Length upload_bytes); the caller keeps it alive.
  const char* upload = nullptr;
  int64_t upload_bytes = 0;
  // The whole request's time, connection to last byte (0: none): a server that answers and then
  // trickles its body never trips a low-speed limit. Past it: status 0, retried (blob_retry.h).
  double deadline_s = 0;
};

struct HttpResponse {
  int status = 0;               // the HTTP status; 0: no response (transport_error says why)
  std::string transport_error;  // connection refused, timed out, reset mid-body, ...; "" if a response came
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names, trimmed values
  std::string body;             // the body when the request had no body_dst
  int64_t body_bytes = 0;       // body bytes received
  bool body_overflow = false;   // the server sent more than body_capacity bytes
  bool transport_permanent = false;  // status 0 that no retry fixes: an untrusted TLS certificate, a bad CA file

  // The value of header `lower_case_name`, "" when absent.
  std::string header(const std::string& lower_case_name) const;
};

// Performs requests; implementations are safe to call from many threads at once.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpResponse perform(const HttpRequest& request) const = 0;
};

// libcurl: one easy handle per thread (kept, so connections are reused), curl_global_init
// once; connects within 10 s and gives up on a transfer that moves nothing for 30 s. HTTPS
// servers are verified against the system's CA certificates, or against the PEM bundle named
// by AWS_CA_BUNDLE (the AWS SDKs' variable), else CURL_CA_BUNDLE (curl's): a private CA or a
// self-signed test server. A certificate that does not verify is a permanent error saying so.
std::shared_ptr<const HttpTransport> curl_transport();
// The CA bundle those variables name ("" when neither is set) and which one named it.
struct CaBundle {
  std::string path, variable;
};
CaBundle ca_bundle_from_environment();

}  // namespace ts

// SigV4 signing (data/s3_signing.h) against AWS's published examples: the SigV4 test suite's
// get-vanilla and get-vanilla-query-order-key-case (credentials AKIDEXAMPLE, service "service",
// 20150830T123600Z), and the S3 documentation's GetObject with a Range header (examplebucket,
// test.txt, 20130524T000000Z), whose canonical request is the form blob storage sends.
#include <gtest/gtest.h>

#include <string>

#include "data/s3_signing.h"

using namespace ts;

namespace {

const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const S3Credentials kSuiteCredentials = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const SigV4Scope kSuiteScope = {"20150830T123600Z", "us-east-1", "service"};

SigV4Request vanilla() {
  return {"GET", "/", {}, {{"host", "example.amazonaws.com"}, {"x-amz-date", "20150830T123600Z"}}, kEmptySha256};
}

}  // namespace

TEST(SigV4, GetVanilla) {
  const SigV4Request request = vanilla();
  EXPECT_EQ(sigv4_canonical_request(request),
            std::string("GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n") +
                kEmptySha256);
  EXPECT_EQ(sigv4_string_to_sign(request, kSuiteScope),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(sigv4_authorization(request, kSuiteScope, kSuiteCredentials),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4, QueryParametersAreSortedByName) {
  SigV4Request request = vanilla();
  request.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  const std::string auth = sigv4_authorization(request, kSuiteScope, kSuiteCredentials);
  EXPECT_NE(auth.find("Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"), std::string::npos)
      << auth;
}

TEST(SigV4, S3GetObjectWithRange) {
  const SigV4Request request = {"GET",
                                "/test.txt",
                                {},
                                {{"x-amz-date", "20130524T000000Z"},
                                 {"range", "bytes=0-9"},
                                 {"host", "examplebucket.s3.amazonaws.com"},
                                 {"x-amz-content-sha256", kEmptySha256}},
                                kEmptySha256};
  const SigV4Scope scope = {"20130524T000000Z", "us-east-1", "s3"};
  EXPECT_EQ(sigv4_canonical_request(request),
            std::string("GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                        "x-amz-content-sha256:") + kEmptySha256 + "\nx-amz-date:20130524T000000Z\n\n"
                        "host;range;x-amz-content-sha256;x-amz-date\n" + kEmptySha256);
  EXPECT_EQ(sigv4_string_to_sign(request, scope),
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  const S3Credentials credentials = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  EXPECT_EQ(sigv4_authorization(request, scope, credentials),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, AuthorizationNeverHoldsTheSecret) {
  const std::string auth = sigv4_authorization(vanilla(), kSuiteScope, kSuiteCredentials);
  EXPECT_EQ(auth.find(kSuiteCredentials.secret_access_key), std::string::npos);
}

TEST(SigV4, AmzDateOfUnixTime) {
  EXPECT_EQ(amz_date_of(1440938160), "20150830T123600Z");  // 2015-08-30 12:36:00 UTC
  EXPECT_EQ(amz_date_of(0), "19700101T000000Z");
}

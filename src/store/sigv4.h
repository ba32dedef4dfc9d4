// SigV4: AWS Signature Version 4 request signing, for the s3:// backend (spec 05 §8).
//
// A request is signed by hashing a canonical form of it (method, percent-encoded path,
// sorted query, sorted lower-case headers, payload hash), deriving a key from the
// secret and the date/region/service scope with HMAC-SHA256, and sending the HMAC of
// the "string to sign" in an Authorization header. Every server that checks the
// signature (AWS, Swift's s3api, MinIO, Ceph) recomputes the same thing from what it
// received, so the encoding rules below have to be followed to the letter.
//
// The hashing and HMAC are OpenSSL's; this file only builds the strings. Pure
// functions, no clock: the caller passes the request time, so the AWS published test
// vectors can be checked exactly (sigv4_test.cc).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::store::sigv4 {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials (x-amz-security-token)
};

// Where a signature is valid: "<yyyymmdd>/<region>/<service>/aws4_request".
struct Scope {
  std::string region = "us-east-1";
  std::string service = "s3";
};

// What is signed. `path` and `query` are raw (not yet encoded): sign() encodes them,
// and the caller must send exactly canonical_uri() and canonical_query() on the wire.
struct Request {
  std::string method;        // "GET", "PUT", ...
  std::string host;          // the Host header as sent: "host" or "host:port"
  std::string path = "/";    // "/bucket/key", raw
  Pairs query;               // name, value; raw; "?lifecycle" is {"lifecycle", ""}
  Pairs headers;             // extra headers to sign (any case); host, x-amz-date and
                             // x-amz-security-token are added by sign()
  std::string payload_hash;  // hex SHA-256 of the body
};

// What to add to the request: the headers sign() signed but the caller did not give
// (x-amz-date, x-amz-security-token when a session token is set, authorization), and
// the intermediate strings, for tests and for debugging a SignatureDoesNotMatch.
struct Signed {
  Pairs headers_to_add;
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // 64 hex digits
};

// "20150830T123600Z", the x-amz-date form of `t` (UTC).
std::string amz_date(std::chrono::system_clock::time_point t);

// SigV4 URI encoding: the unreserved characters A-Z a-z 0-9 - . _ ~ are kept, every
// other byte becomes %XX (upper-case hex); '/' is kept when `keep_slash` (paths) and
// encoded otherwise (query names and values).
std::string uri_encode(std::string_view s, bool keep_slash);

// The path as it is signed and sent: uri_encode(path, true), "/" when empty.
std::string canonical_uri(std::string_view path);

// "a=1&b=2": names and values encoded, sorted by name then value. Also the query
// string to send, so that what is signed is what is sent.
std::string canonical_query(const Pairs& query);

// HMAC-SHA256 of `data` under `key` (raw bytes in, 32 raw bytes out), via OpenSSL.
std::string hmac_sha256(std::string_view key, std::string_view data);

// The derived signing key for `date` ("yyyymmdd"): HMAC chain over
// "AWS4" + secret, date, region, service, "aws4_request".
std::string signing_key(std::string_view secret, std::string_view date, const Scope& scope);

// Signs `request` made at `amz_date_value` (amz_date()). Header values are trimmed and
// runs of spaces folded, names lower-cased, as SigV4 requires.
Signed sign(const Request& request, const Credentials& credentials, const Scope& scope,
            std::string_view amz_date_value);

}  // namespace berth::store::sigv4

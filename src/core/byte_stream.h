// A flat byte encoding of plain values and vectors of them, for state that travels between
// ranks as one message (a rank's checkpoint state, train/checkpoint.cpp): values in host byte
// order (sender and receiver are ranks of one job), vectors as a 64-bit count then the elements.
// A reader that runs past the end throws RuntimeError instead of reading garbage.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace ts {

class ByteWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <typename T>
  void put(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(static_cast<uint64_t>(values.size()));
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  template <typename T>
  std::vector<T> get_vector() {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t count = get<uint64_t>();
    TS_CHECK(count <= (bytes_.size() - pos_) / sizeof(T), "byte stream: a vector of " + std::to_string(count) +
                                                              " elements runs past the end of the message");
    std::vector<T> values(static_cast<size_t>(count));
    if (count > 0) std::memcpy(values.data(), take(values.size() * sizeof(T)), values.size() * sizeof(T));
    return values;
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  const char* take(size_t n) {
    TS_CHECK(n <= bytes_.size() - pos_, "byte stream: the message ends " + std::to_string(n - (bytes_.size() - pos_)) +
                                            " byte(s) early");
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace ts

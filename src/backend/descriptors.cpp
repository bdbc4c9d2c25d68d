// Printing and parsing of the named problem descriptors (backend/descriptors.h). Every
// descriptor round-trips: parse(d.str()) == d. parse() also rejects shapes no backend can run
// (non-positive sizes, negative padding, channels not divisible by groups, empty outputs).
//
// Formats (fields in this fixed order):
//   conv:mb128_ic32oc64_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1[_nobias][_relu]  (_g may be left out)
//   pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0                       (max | avg)
//   fc:mb64_ic3136oc512[_nobias]
//   bn:mb2c16_h8w8[_eps0.001][_relu]  (eps printed only when it differs from 1e-5, shortest
//                                      round-trip float text)
//   eltwise:relu_n100              (relu | relu6 | sigmoid)
// A trailing _relu marks a fused ReLU (the op writes relu(result); see descriptors.h).
#include "backend/descriptors.h"

#include <charconv>
#include <string>
#include <system_error>

#include "core/error.h"

namespace ts {
namespace {

// A tiny left-to-right scanner over one descriptor string. Any mismatch throws a ConfigError
// that quotes the whole text and the expected form.
class Scanner {
 public:
  Scanner(std::string_view text, const char* form) : text_(text), form_(form) {}

  void expect(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal)
      fail("expected '" + std::string(literal) + "' at position " + std::to_string(pos_));
    pos_ += literal.size();
  }
  bool accept(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }
  // A decimal integer (optionally negative, so that a negative size gets a clear message).
  int64_t integer(const char* field) { return number<int64_t>(field, "an integer"); }
  int64_t field(std::string_view key) {
    expect(key);
    return integer(std::string(key).c_str());
  }
  float real(const char* field) { return number<float>(field, "a number"); }
  void finish() {
    if (pos_ != text_.size())
      fail("unexpected trailing text '" + std::string(text_.substr(pos_)) + "'");
  }
  void require(bool ok, const std::string& what) {
    if (!ok) fail(what);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError("bad descriptor '" + std::string(text_) + "': " + what +
                      "; expected the form " + form_);
  }

 private:
  template <typename T>
  T number(const char* field, const char* what) {
    T value = 0;
    const char* first = text_.data() + pos_;
    auto [ptr, ec] = std::from_chars(first, text_.data() + text_.size(), value);
    if (ec != std::errc() || ptr == first)
      fail(std::string("expected ") + what + " for '" + field + "' at position " + std::to_string(pos_));
    pos_ += static_cast<size_t>(ptr - first);
    return value;
  }

  std::string_view text_;
  const char* form_;
  size_t pos_ = 0;
};

std::string num(int64_t v) { return std::to_string(v); }

// The input and window fields conv and pool share, "_ih14iw14_kh5kw5_sh1sw1_ph2pw2".
template <typename Desc>
std::string window_text(const Desc& d) {
  return "_ih" + num(d.ih) + "iw" + num(d.iw) + "_kh" + num(d.kh) + "kw" + num(d.kw) + "_sh" + num(d.sh) + "sw" +
         num(d.sw) + "_ph" + num(d.ph) + "pw" + num(d.pw);
}

template <typename Desc>
void scan_window(Scanner& sc, Desc& d) {
  d.ih = sc.field("_ih");
  d.iw = sc.field("iw");
  d.kh = sc.field("_kh");
  d.kw = sc.field("kw");
  d.sh = sc.field("_sh");
  d.sw = sc.field("sw");
  d.ph = sc.field("_ph");
  d.pw = sc.field("pw");
}

}  // namespace

// ---- conv -----------------------------------------------------------------------------------
std::string ConvDesc::str() const {
  std::string s = "conv:mb" + num(mb) + "_ic" + num(ic) + "oc" + num(oc) + window_text(*this) + "_g" + num(groups);
  if (!bias) s += "_nobias";
  if (relu) s += "_relu";
  return s;
}

ConvDesc ConvDesc::parse(std::string_view text) {
  Scanner sc(text, "conv:mb128_ic32oc64_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1[_nobias][_relu]");
  ConvDesc d;
  sc.expect("conv:");
  d.mb = sc.field("mb");
  d.ic = sc.field("_ic");
  d.oc = sc.field("oc");
  scan_window(sc, d);
  d.groups = sc.accept("_g") ? sc.integer("g") : 1;
  d.bias = !sc.accept("_nobias");
  d.relu = sc.accept("_relu");
  sc.finish();
  sc.require(d.mb > 0 && d.ic > 0 && d.oc > 0 && d.ih > 0 && d.iw > 0 && d.kh > 0 && d.kw > 0 &&
                 d.sh > 0 && d.sw > 0 && d.groups > 0,
             "sizes, strides and groups must be positive");
  sc.require(d.ph >= 0 && d.pw >= 0, "padding must be >= 0");
  sc.require(d.ic % d.groups == 0 && d.oc % d.groups == 0,
             "ic and oc must be divisible by the groups");
  sc.require(d.ih + 2 * d.ph >= d.kh && d.iw + 2 * d.pw >= d.kw,
             "the kernel is larger than the padded input");
  return d;
}

// ---- pool -----------------------------------------------------------------------------------
std::string PoolDesc::str() const {
  return std::string("pool:") + (kind == PoolKind::max ? "max" : "avg") + "_mb" + num(mb) + "c" + num(c) +
         window_text(*this);
}

PoolDesc PoolDesc::parse(std::string_view text) {
  Scanner sc(text, "pool:max|avg_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0");
  PoolDesc d;
  sc.expect("pool:");
  if (sc.accept("max"))
    d.kind = PoolKind::max;
  else if (sc.accept("avg"))
    d.kind = PoolKind::avg;
  else
    sc.fail("unknown pooling kind (accepted: max, avg)");
  d.mb = sc.field("_mb");
  d.c = sc.field("c");
  scan_window(sc, d);
  sc.finish();
  sc.require(d.mb > 0 && d.c > 0 && d.ih > 0 && d.iw > 0 && d.kh > 0 && d.kw > 0 && d.sh > 0 &&
                 d.sw > 0,
             "sizes and strides must be positive");
  // Every window must overlap the real input (also what oneDNN requires).
  sc.require(d.ph >= 0 && d.pw >= 0 && d.ph < d.kh && d.pw < d.kw,
             "padding must be >= 0 and smaller than the kernel");
  sc.require(d.ih + 2 * d.ph >= d.kh && d.iw + 2 * d.pw >= d.kw,
             "the kernel is larger than the padded input");
  return d;
}

// ---- fc -------------------------------------------------------------------------------------
std::string FcDesc::str() const {
  std::string s = "fc:mb" + num(mb) + "_ic" + num(ic) + "oc" + num(oc);
  if (!bias) s += "_nobias";
  return s;
}

FcDesc FcDesc::parse(std::string_view text) {
  Scanner sc(text, "fc:mb64_ic3136oc512[_nobias]");
  FcDesc d;
  sc.expect("fc:");
  d.mb = sc.field("mb");
  d.ic = sc.field("_ic");
  d.oc = sc.field("oc");
  d.bias = !sc.accept("_nobias");
  sc.finish();
  sc.require(d.mb > 0 && d.ic > 0 && d.oc > 0, "sizes must be positive");
  return d;
}

// ---- bn -------------------------------------------------------------------------------------
std::string BnDesc::str() const {
  std::string s = "bn:mb" + num(mb) + "c" + num(c) + "_h" + num(h) + "w" + num(w);
  if (eps != 1e-5f) {
    char buf[32];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, eps);  // shortest round-trip text
    s += "_eps" + std::string(buf, ec == std::errc() ? ptr : buf);
  }
  if (relu) s += "_relu";
  return s;
}

BnDesc BnDesc::parse(std::string_view text) {
  Scanner sc(text, "bn:mb2c16_h8w8[_eps0.001][_relu]");
  BnDesc d;
  sc.expect("bn:");
  d.mb = sc.field("mb");
  d.c = sc.field("c");
  d.h = sc.field("_h");
  d.w = sc.field("w");
  if (sc.accept("_eps")) d.eps = sc.real("eps");
  d.relu = sc.accept("_relu");
  sc.finish();
  sc.require(d.mb > 0 && d.c > 0 && d.h > 0 && d.w > 0, "sizes must be positive");
  sc.require(d.eps > 0, "eps must be positive");
  return d;
}

// ---- eltwise --------------------------------------------------------------------------------
const char* eltwise_kind_name(EltwiseKind kind) {
  return kind == EltwiseKind::relu ? "relu" : kind == EltwiseKind::relu6 ? "relu6" : "sigmoid";
}

std::string EltwiseDesc::str() const { return std::string("eltwise:") + eltwise_kind_name(kind) + "_n" + num(n); }

EltwiseDesc EltwiseDesc::parse(std::string_view text) {
  Scanner sc(text, "eltwise:relu|relu6|sigmoid_n100");
  EltwiseDesc d;
  sc.expect("eltwise:");
  if (sc.accept("relu6"))
    d.kind = EltwiseKind::relu6;
  else if (sc.accept("relu"))
    d.kind = EltwiseKind::relu;
  else if (sc.accept("sigmoid"))
    d.kind = EltwiseKind::sigmoid;
  else
    sc.fail("unknown activation (accepted: relu, relu6, sigmoid)");
  d.n = sc.field("_n");
  sc.finish();
  sc.require(d.n > 0, "n must be positive");
  return d;
}

}  // namespace ts

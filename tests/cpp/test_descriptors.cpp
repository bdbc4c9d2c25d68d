// Named problem descriptors: every kind prints the documented text and parses back to itself;
// malformed or impossible text is a ConfigError that quotes the text and the expected form.
#include <gtest/gtest.h>

#include <string>

#include "backend/descriptors.h"
#include "core/error.h"

namespace ts {
namespace {

TEST(Descriptors, ConvFormatAndRoundTrip) {
  ConvDesc d;
  d.mb = 128; d.ic = 32; d.oc = 64; d.ih = 14; d.iw = 14; d.kh = 5; d.kw = 5;
  d.sh = 1; d.sw = 1; d.ph = 2; d.pw = 2; d.groups = 1;
  EXPECT_EQ(d.str(), "conv:mb128_ic32oc64_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1");
  EXPECT_EQ(ConvDesc::parse(d.str()), d);
  ConvDesc e;
  e.mb = 1; e.ic = 6; e.oc = 9; e.ih = 7; e.iw = 5; e.kh = 3; e.kw = 1;
  e.sh = 2; e.sw = 1; e.ph = 1; e.pw = 0; e.groups = 3; e.bias = false;
  EXPECT_EQ(e.str(), "conv:mb1_ic6oc9_ih7iw5_kh3kw1_sh2sw1_ph1pw0_g3_nobias");
  EXPECT_EQ(ConvDesc::parse(e.str()), e);
  // The short form without _g (as in STYLE.md) means one group.
  EXPECT_EQ(ConvDesc::parse("conv:mb128_ic32oc64_ih14iw14_kh5kw5_sh1sw1_ph2pw2"), d);
}

TEST(Descriptors, PoolFormatAndRoundTrip) {
  PoolDesc d;
  d.kind = PoolKind::max; d.mb = 2; d.c = 3; d.ih = 8; d.iw = 8; d.kh = 2; d.kw = 2;
  d.sh = 2; d.sw = 2;
  EXPECT_EQ(d.str(), "pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0");
  EXPECT_EQ(PoolDesc::parse(d.str()), d);
  d.kind = PoolKind::avg; d.ih = 7; d.iw = 5; d.kh = 3; d.kw = 3; d.ph = 1; d.pw = 1;
  EXPECT_EQ(d.str(), "pool:avg_mb2c3_ih7iw5_kh3kw3_sh2sw2_ph1pw1");
  EXPECT_EQ(PoolDesc::parse(d.str()), d);
}

TEST(Descriptors, FcFormatAndRoundTrip) {
  FcDesc d;
  d.mb = 64; d.ic = 3136; d.oc = 512;
  EXPECT_EQ(d.str(), "fc:mb64_ic3136oc512");
  EXPECT_EQ(FcDesc::parse(d.str()), d);
  d.bias = false;
  EXPECT_EQ(d.str(), "fc:mb64_ic3136oc512_nobias");
  EXPECT_EQ(FcDesc::parse(d.str()), d);
}

TEST(Descriptors, BnFormatAndRoundTrip) {
  BnDesc d;
  d.mb = 2; d.c = 16; d.h = 8; d.w = 8;
  EXPECT_EQ(d.str(), "bn:mb2c16_h8w8");
  EXPECT_EQ(BnDesc::parse(d.str()), d);
  for (float eps : {1e-3f, 1e-6f, 0.1f, 2.5e-4f}) {
    d.eps = eps;
    EXPECT_NE(d.str().find("_eps"), std::string::npos) << d.str();
    EXPECT_EQ(BnDesc::parse(d.str()), d) << d.str();
  }
  d.eps = 1e-3f;
  EXPECT_EQ(d.str(), "bn:mb2c16_h8w8_eps0.001");
}

TEST(Descriptors, EltwiseFormatAndRoundTrip) {
  EltwiseDesc d;
  d.n = 100;
  EXPECT_EQ(d.str(), "eltwise:relu_n100");
  EXPECT_EQ(EltwiseDesc::parse(d.str()), d);
  d.kind = EltwiseKind::relu6;
  EXPECT_EQ(d.str(), "eltwise:relu6_n100");
  EXPECT_EQ(EltwiseDesc::parse(d.str()), d);
  d.kind = EltwiseKind::sigmoid;
  EXPECT_EQ(d.str(), "eltwise:sigmoid_n100");
  EXPECT_EQ(EltwiseDesc::parse(d.str()), d);
}

template <typename Desc>
void expect_config_error(const std::string& text, const std::string& form_fragment) {
  try {
    Desc::parse(text);
    ADD_FAILURE() << "parse accepted '" << text << "'";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + text + "'"), std::string::npos) << msg;  // names the text
    EXPECT_NE(msg.find(form_fragment), std::string::npos) << msg;     // shows the expected form
  }
}

TEST(Descriptors, MalformedConvThrows) {
  const std::string form = "conv:mb128_ic32oc64";
  for (const char* bad : {"", "conv:", "pool:mb1_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g1",
                          "conv:mb1_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g1_extra",
                          "conv:mb1_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0_g1",
                          "conv:mbX_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g1",
                          "conv:mb0_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g1",
                          "conv:mb1_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph-1pw0_g1",
                          "conv:mb1_ic3oc4_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g2",
                          "conv:mb1_ic1oc1_ih3iw3_kh5kw5_sh1sw1_ph0pw0_g1",
                          " conv:mb1_ic1oc1_ih3iw3_kh1kw1_sh1sw1_ph0pw0_g1"})
    expect_config_error<ConvDesc>(bad, form);
}

TEST(Descriptors, MalformedOthersThrow) {
  for (const char* bad : {"pool:min_mb1c1_ih4iw4_kh2kw2_sh2sw2_ph0pw0",
                          "pool:max_mb1c1_ih4iw4_kh2kw2_sh2sw2",
                          "pool:max_mb1c1_ih4iw4_kh2kw2_sh0sw2_ph0pw0",
                          "pool:max_mb1c1_ih4iw4_kh2kw2_sh2sw2_ph2pw0"})
    expect_config_error<PoolDesc>(bad, "pool:max|avg");
  for (const char* bad : {"fc:mb1_ic2", "fc:mb1_ic2oc3_bias", "fc:mb1ic2oc3", "fc:mb-1_ic2oc3"})
    expect_config_error<FcDesc>(bad, "fc:mb64_ic3136oc512");
  for (const char* bad : {"bn:mb2c16_h8", "bn:mb2c16_h8w8_eps", "bn:mb2c16_h8w8_eps-1",
                          "bn:mb2c16_h8w8_epsx"})
    expect_config_error<BnDesc>(bad, "bn:mb2c16_h8w8");
  for (const char* bad : {"eltwise:tanh_n4", "eltwise:relu", "eltwise:relu_n0", "eltwise:relu_n4x"})
    expect_config_error<EltwiseDesc>(bad, "eltwise:relu|relu6|sigmoid");
}

}  // namespace
}  // namespace ts

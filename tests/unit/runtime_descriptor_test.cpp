#include <gtest/gtest.h>

#include "runtime/src/descriptor.h"
#include "runtime/src/rt_error.h"
#include "descriptor_rejection.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::parseDescriptor;
using etc::rt::testing::rejection;
using etc::rt::testing::sampleDescriptor;
using nlohmann::json;

TEST(RuntimeDescriptor, ParsesTheSample) {
  etc::rt::Descriptor d = parseDescriptor(sampleDescriptor().dump());
  EXPECT_EQ(d.module, "sample");
  EXPECT_EQ(d.compiler, "etcc 0.1.0");
  ASSERT_EQ(d.syms.size(), 2u);
  EXPECT_EQ(d.syms[1].name, "N");
  EXPECT_EQ(d.syms[1].hi, 1000000);
  ASSERT_EQ(d.tensors.size(), 4u);
  EXPECT_EQ(d.tensors[0].dtype, ETC_DTYPE_BF16);
  EXPECT_EQ(d.tensors[2].role, ETC_ROLE_TEMP);
  EXPECT_EQ(d.tensors[2].shape_text[1], "cdiv(N, 16)");
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0].shape_text, (std::vector<std::string>{"cdiv(B, 16)", "2"}));
  EXPECT_EQ(d.events[1].offset, 16);
  EXPECT_EQ(d.event_words, 20);
  ASSERT_EQ(d.graphs.size(), 1u);
  EXPECT_EQ(d.graphs[0].megas.at(0).name, "etc_main_mega");
  EXPECT_EQ(d.graphs[0].unfused[1].task, 1);
  EXPECT_EQ(d.graphs[0].unfused[1].threads, 128);
  EXPECT_EQ(d.findTensor("y"), 3);
  EXPECT_EQ(d.findGraph("nope"), -1);
  EXPECT_EQ(d.ir, "module @sample\n");
}

TEST(RuntimeDescriptor, ShapeTextIsRenderedWhenAbsent) {
  json j = sampleDescriptor();
  j["tensors"][2].erase("shape_text");
  EXPECT_EQ(parseDescriptor(j.dump()).tensors[2].shape_text[1], "cdiv(N, 16)");
}

TEST(RuntimeDescriptor, RejectsBadDescriptors) {
  EXPECT_EQ(rejection(json("{")), "descriptor: not a JSON object");
  try {
    parseDescriptor("{not json");
    ADD_FAILURE();
  } catch (const etc::rt::Error& e) {
    EXPECT_STREQ(e.what(), "descriptor: not valid JSON");
  }
  json j = sampleDescriptor();
  j["format"] = "other";
  EXPECT_EQ(rejection(j), "descriptor: format is \"other\", expected \"etc.module\"");
  j = sampleDescriptor();
  j["abi"] = 3;
  EXPECT_EQ(rejection(j),
            "descriptor: abi 3 is not supported (this runtime supports abi 2): the fatbin comes from a newer etcc; run it "
            "with that release's runtime or compile the module again with the etcc of this runtime");
  j["abi"] = 0;
  EXPECT_EQ(rejection(j),
            "descriptor: abi 0 is not supported (this runtime supports abi 2): the fatbin comes from an older etcc; "
            "compile the module again with the etcc of this runtime");
  j = sampleDescriptor();
  j.erase("syms");
  EXPECT_EQ(rejection(j), "descriptor: the descriptor has no \"syms\"");
  j = sampleDescriptor();
  j["syms"][0]["lo"] = 200;
  EXPECT_EQ(rejection(j), "descriptor: sym B has an empty range [200, 128]");
  j = sampleDescriptor();
  j["tensors"][0]["dtype"] = "f64";
  EXPECT_EQ(rejection(j), "descriptor: tensor x has unknown dtype \"f64\"");
  j = sampleDescriptor();
  j["tensors"][0]["role"] = "scratch";
  EXPECT_EQ(rejection(j), "descriptor: tensor x has unknown role \"scratch\"");
  j = sampleDescriptor();
  j["tensors"][1]["name"] = "x";
  EXPECT_EQ(rejection(j), "descriptor: tensor 'x' is listed twice");
  j = sampleDescriptor();
  j["tensors"][0]["shape"] = {1, 2, 3, 4, 5};
  j["tensors"][0].erase("shape_text");
  EXPECT_EQ(rejection(j), "descriptor: tensor x has rank 5, above the limit 4");
  j = sampleDescriptor();
  j["tensors"][0]["shape"][0] = json::array({"sym", 2});
  EXPECT_EQ(rejection(j), "descriptor: tensor x: bad shape expression [\"sym\",2]: sym index out of range (the module has 2 syms)");
  j = sampleDescriptor();
  j["events"][1]["offset"] = 17;
  EXPECT_EQ(rejection(j), "descriptor: event flag: words [17, +4) are outside event_words 20");
  j = sampleDescriptor();
  j["graphs"][0]["unfused"][0]["task"] = 2;
  EXPECT_EQ(rejection(j), "descriptor: graph main unfused kernel: task 2 is not a task index (there are 2)");
  j = sampleDescriptor();
  j["graphs"][0]["mega"]["threads"] = 0;
  EXPECT_EQ(rejection(j), "descriptor: graph main mega: threads 0 is outside [1, 1024]");
  j = sampleDescriptor();
  j["graphs"] = json::array();
  EXPECT_EQ(rejection(j), "descriptor: the module has no graphs");
  j = sampleDescriptor();
  j["params_bytes"] = 96;
  EXPECT_EQ(rejection(j), "descriptor: params_bytes is 96 but 2 syms and 4 tensors make 88 (abi.h EtcParams)");
  j = sampleDescriptor();
  j["derived"] = json::array({{{"expr", json::array({"cdiv", 16, json::array({"sym", 0})})}}});
  EXPECT_EQ(rejection(j),
            "descriptor: params_bytes is 88 but 2 syms and 4 tensors and 1 derived syms make 96 (abi.h EtcParams)");
  j["derived"][0]["expr"] = json::array({"cdiv", 16, json::array({"sym", 5})});
  j["params_bytes"] = 96;
  EXPECT_EQ(rejection(j), "descriptor: derived sym 0: bad shape expression [\"sym\",5]: sym index out of range (the module has 2 syms)");
  j["derived"][0] = 3;
  EXPECT_EQ(rejection(j), "descriptor: derived sym 0 is not an object");
  j = sampleDescriptor();
  j["ir"] = 5;
  EXPECT_EQ(rejection(j), "descriptor: the descriptor: \"ir\" is not a string");
}

// etcc --specialize: "mega" lists a megakernel per range of one sym; the ranges must continue
// one another over the sym's whole range, and megaFor picks the one holding the value.
TEST(RuntimeDescriptor, MegakernelsOfSymRanges) {
  auto mega = [](const std::string& name, json when) {
    return json{{"kernel", name}, {"threads", 256}, {"when", std::move(when)}};
  };
  json j = sampleDescriptor();
  j["graphs"][0]["mega"] = json::array({mega("k_lo", {{"sym", 0}, {"lo", 1}, {"hi", 15}}),
                                        mega("k_mid", {{"sym", 0}, {"lo", 16}, {"hi", 63}}),
                                        mega("k_hi", {{"sym", 0}, {"lo", 64}, {"hi", 128}})});
  etc::rt::Descriptor d = parseDescriptor(j.dump());
  const etc::rt::GraphDesc& g = d.graphs.at(0);
  ASSERT_EQ(g.megas.size(), 3u);
  EXPECT_EQ(g.megas[1].name, "k_mid");
  EXPECT_EQ(g.megas[1].when_sym, 0);
  EXPECT_EQ(g.megas[1].when_lo, 16);
  EXPECT_EQ(g.megas[1].when_hi, 63);
  EXPECT_EQ(g.megaFor({1, 7}), 0u);
  EXPECT_EQ(g.megaFor({15, 7}), 0u);
  EXPECT_EQ(g.megaFor({16, 7}), 1u);
  EXPECT_EQ(g.megaFor({63, 7}), 1u);
  EXPECT_EQ(g.megaFor({64, 7}), 2u);
  EXPECT_EQ(g.megaFor({128, 7}), 2u);
  EXPECT_EQ(sampleDescriptor()["graphs"][0]["mega"].is_object(), true);
  EXPECT_EQ(parseDescriptor(sampleDescriptor().dump()).graphs[0].megaFor({77, 7}), 0u);

  // The rejection of j with mega i's when.key set to v.
  auto with = [&](int i, const char* key, int64_t v) {
    json bad = j;
    bad["graphs"][0]["mega"][i]["when"][key] = v;
    return rejection(bad);
  };
  const std::string continues = " does not continue the ranges before it from ";
  EXPECT_EQ(with(1, "lo", 17), "descriptor: graph main mega 1: range [17, 63] of sym B" + continues + "16 within [1, 128]");
  EXPECT_EQ(with(2, "lo", 60), "descriptor: graph main mega 2: range [60, 128] of sym B" + continues + "64 within [1, 128]");
  EXPECT_EQ(with(0, "lo", 2), "descriptor: graph main mega 0: range [2, 15] of sym B" + continues + "1 within [1, 128]");
  EXPECT_EQ(with(2, "hi", 100), "descriptor: graph main: the megakernels' ranges end at 100, short of sym B's 128");
  EXPECT_EQ(with(0, "sym", 2), "descriptor: graph main mega 0: when.sym 2 is not a sym index (there are 2)");
  json other_sym = j;
  other_sym["graphs"][0]["mega"][1]["when"] = {{"sym", 1}, {"lo", 16}, {"hi", 63}};
  EXPECT_EQ(rejection(other_sym), "descriptor: graph main mega 1: its range is of another sym than the first's");
  json no_when = j;
  no_when["graphs"][0]["mega"][0].erase("when");
  EXPECT_EQ(rejection(no_when), "descriptor: graph main mega 0 has no \"when\"");
  json empty = j;
  empty["graphs"][0]["mega"] = json::array();
  EXPECT_EQ(rejection(empty), "descriptor: graph main: \"mega\" is neither an object nor a non-empty list");
}

TEST(RuntimeDescriptor, ParamsBytesFollowsAbiLayout) {
  EXPECT_EQ(etc::rt::paramsBytes(0, 0), 8 * 2 + 40);
  EXPECT_EQ(etc::rt::paramsBytes(2, 4), 8 * 6 + 40);
  EXPECT_EQ(etc::rt::paramsBytes(2, 4, 3), 8 * 9 + 40);
}

}  // namespace

TEST(RuntimeDescriptor, TensorMapsOfRank2SixteenBitParams) {
  json j = sampleDescriptor();
  EXPECT_TRUE(parseDescriptor(j.dump()).tmaps.empty());  // absent: none
  j["tensors"][1]["dtype"] = "bf16";
  j["tmaps"] = json::array({1});
  EXPECT_EQ(parseDescriptor(j.dump()).tmaps, (std::vector<uint32_t>{1}));
  j["tmaps"] = json::array({4});
  EXPECT_EQ(rejection(j), "descriptor: tmaps[0] is not a tensor index");
  j["tmaps"] = json::array({0});
  EXPECT_EQ(rejection(j), "descriptor: tmaps[0]: tensor 'x' is not a rank-2 16-bit param");
  j["tmaps"] = json::array({1, 1});
  EXPECT_EQ(rejection(j), "descriptor: tmaps[1] is not in ascending order");
  j["tensors"][1]["dtype"] = "f32";
  j["tmaps"] = json::array({1});
  EXPECT_EQ(rejection(j), "descriptor: tmaps[0]: tensor 'w' is not a rank-2 16-bit param");
}

// Initializers stored in files beside the model, and names that try to leave its folder.
#include "helpers.h"

namespace ember::test {
namespace {

void set_external(onnx::TensorProto& t, const std::string& location, int64_t offset = -1,
                  int64_t length = -1) {
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

// y = x * w + b, with w and b read from `location` at offsets 0 and 16.
onnx::ModelProto model_with_external(const std::string& location) {
  onnx::ModelProto m = new_model();
  auto& g = *m.mutable_graph();
  add_input(g, "x", {"4"});
  add_output(g, "y", {"4"});
  auto* w = g.add_initializer();
  *w = float_tensor("w", {4}, {});
  set_external(*w, location, 0, 16);
  auto* b = g.add_initializer();
  *b = float_tensor("b", {2}, {});
  set_external(*b, location, 16);  // length: to the end of the file
  add_node(g, "Mul", {"x", "w"}, {"t"});
  add_node(g, "Add", {"t", "b"}, {"y"});
  return m;
}

const std::vector<float> kWeights = {1.f, -2.f, 3.5f, 0.25f, 7.f, 8.f};

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "model/data");
    write_file(dir_ / "model/data/weights.bin", bytes_of(kWeights));
    write_file(dir_ / "secret.bin", bytes_of(kWeights));
  }
  std::string save(const onnx::ModelProto& m) {
    write_file(dir_ / "model/m.onnx", m.SerializeAsString());
    return dir_ / "model/m.onnx";
  }
  TempDir dir_;
};

TEST_F(ExternalData, ReadsRangesOfAFileInsideTheModelFolder) {
  Graph graph = load_model(save(model_with_external("data/weights.bin")));
  EXPECT_EQ(bytes_of(graph.initializers.at("w")), bytes_of(std::vector<float>(kWeights.begin(), kWeights.begin() + 4)));
  EXPECT_EQ(bytes_of(graph.initializers.at("b")), bytes_of(std::vector<float>{7.f, 8.f}));
}

TEST_F(ExternalData, DotDotInsideTheFolderIsFine) {
  Graph graph = load_model(save(model_with_external("data/../data/weights.bin")));
  EXPECT_EQ(graph.initializers.at("b").numel(), 2);
}

TEST_F(ExternalData, PathsLeavingTheFolderAreRefused) {
  std::string msg = error_of([&] { load_model(save(model_with_external("../secret.bin"))); });
  EXPECT_TRUE(contains(msg, "m.onnx: tensor 'w'")) << msg;
  EXPECT_TRUE(contains(msg, "outside the model's folder")) << msg;

  msg = error_of([&] { load_model(save(model_with_external(dir_ / "secret.bin"))); });
  EXPECT_TRUE(contains(msg, "absolute path")) << msg;

  std::filesystem::create_symlink(dir_ / "secret.bin", dir_ / "model/link.bin");
  msg = error_of([&] { load_model(save(model_with_external("link.bin"))); });
  EXPECT_TRUE(contains(msg, "outside the model's folder")) << msg;

  std::filesystem::create_directory_symlink(dir_.str(), dir_ / "model/up");
  msg = error_of([&] { load_model(save(model_with_external("up/secret.bin"))); });
  EXPECT_TRUE(contains(msg, "outside the model's folder")) << msg;
}

TEST_F(ExternalData, MissingFilesAndShortRangesAreErrors) {
  std::string msg = error_of([&] { load_model(save(model_with_external("data/none.bin"))); });
  EXPECT_TRUE(contains(msg, "'data/none.bin' does not exist")) << msg;

  onnx::ModelProto past_end = model_with_external("data/weights.bin");
  set_external(*past_end.mutable_graph()->mutable_initializer(0), "data/weights.bin", 20, 16);
  msg = error_of([&] { load_model(save(past_end)); });
  EXPECT_TRUE(contains(msg, "past its end")) << msg;

  onnx::ModelProto wrong_length = model_with_external("data/weights.bin");
  set_external(*wrong_length.mutable_graph()->mutable_initializer(0), "data/weights.bin", 0, 8);
  msg = error_of([&] { load_model(save(wrong_length)); });
  EXPECT_TRUE(contains(msg, "8 bytes, expected 16")) << msg;

  onnx::ModelProto bad_offset = model_with_external("data/weights.bin");
  auto* offset = bad_offset.mutable_graph()->mutable_initializer(0)->mutable_external_data(1);
  offset->set_value("-4");
  msg = error_of([&] { load_model(save(bad_offset)); });
  EXPECT_TRUE(contains(msg, "expected a non-negative integer")) << msg;
}

TEST_F(ExternalData, ModelsFromMemoryNeedAFolder) {
  std::string msg = error_of([&] { load(model_with_external("data/weights.bin")); });
  EXPECT_TRUE(contains(msg, "tensor 'w' is stored as external data")) << msg;
  EXPECT_TRUE(contains(msg, "no base folder for external data was given")) << msg;
  Graph graph = load(model_with_external("data/weights.bin"), dir_ / "model");
  EXPECT_EQ(graph.initializers.at("w").numel(), 4);
}

}  // namespace
}  // namespace ember::test

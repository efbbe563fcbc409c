// The CUDA backend is a module libember loads only when a CUDA device is asked for
// (engine/src/cuda_module.h). Each test runs in a fresh child process (gtest's
// "threadsafe" death-test style re-executes this program for it), since what a process
// has mapped, and which module it loaded, depend on everything it did before.
#include <ember/ember.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

namespace ember {
namespace {

const std::string kModel = std::string(EMBER_SOURCE_DIR) + "/models/default/model.onnx";
const std::string kInput = std::string(EMBER_SOURCE_DIR) + "/models/default/input.npy";

// The lines of /proc/self/maps naming a CUDA library or ember's CUDA module.
std::string cuda_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  for (const char* name : {"libcudart", "libcublas", "libcudnn", "libember_cuda"}) {
    maps.clear();
    maps.seekg(0);
    while (std::getline(maps, line))
      if (line.find(name) != std::string::npos) found += line + "\n";
  }
  return found;
}

void run_default_model_on_the_cpu() {
  Session session(kModel);
  const Tensor input = read_npy(kInput);
  session.run({{session.inputs()[0].name, input}});
}

class CudaModule : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(CudaModule, ACpuOnlyProcessMapsNoCudaLibrary) {
  EXPECT_EXIT(
      {
        run_default_model_on_the_cpu();
        const std::string mapped = cuda_mappings();
        std::cerr << mapped;
        std::exit(mapped.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

#ifdef EMBER_TEST_CUDA_MODULE
// The check above can fail: asking for GPUs maps the module and the CUDA runtime.
TEST_F(CudaModule, ListingGpusLoadsTheModuleAndTheCudaLibraries) {
  EXPECT_EXIT(
      {
        const GpuReport report = list_gpus();
        const std::string mapped = cuda_mappings();
        std::cerr << "cuda_built " << report.cuda_built << "\n" << mapped;
        const bool loaded = report.cuda_built && mapped.find("libember_cuda") != std::string::npos &&
                            mapped.find("libcudart") != std::string::npos;
        std::exit(loaded ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "cuda_built 1");
}

// What a machine without the module (or without the CUDA libraries it needs) shows:
// dlopen's own words, and what to do; list_gpus() reports it, a CUDA session raises it.
TEST_F(CudaModule, AMissingModuleIsNamedWithWhatToDo) {
  EXPECT_EXIT(
      {
        setenv("EMBER_CUDA_MODULE", "/nonexistent/libember_cuda.so", 1);
        const std::string problem = list_gpus().problem;
        std::string error;
        try {
          Session session(kModel, {.device = "cuda"});
        } catch (const Error& e) {
          error = e.what();
        }
        std::cerr << "problem: " << problem << "\nerror: " << error << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "problem: the CUDA backend could not be loaded: /nonexistent/libember_cuda.so: cannot open shared "
      "object file.*LD_LIBRARY_PATH.*\nerror: device 'cuda' is not available: the CUDA backend could not be "
      "loaded: /nonexistent/libember_cuda.so");
}

TEST_F(CudaModule, ALibraryThatIsNoModuleIsRefused) {
  EXPECT_EXIT(
      {
        setenv("EMBER_CUDA_MODULE", "libm.so.6", 1);
        std::cerr << list_gpus().problem << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "libm.so.6 is not an ember CUDA module");
}

TEST_F(CudaModule, AModuleWithAnotherInterfaceIsRefused) {
  EXPECT_EXIT(
      {
        setenv("EMBER_CUDA_MODULE", EMBER_FAKE_MODULE_OTHER_INTERFACE, 1);
        std::cerr << list_gpus().problem << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "was built for ember \\? \\(module interface 999\\), this libember is .*use the libember_cuda.so built "
      "with this libember");
}

TEST_F(CudaModule, AModuleFromAnotherVersionIsRefused) {
  EXPECT_EXIT(
      {
        setenv("EMBER_CUDA_MODULE", EMBER_FAKE_MODULE_OTHER_VERSION, 1);
        std::cerr << list_gpus().problem << "\n";
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "was built for ember 0.0.0-fake \\(module interface 1\\)");
}
#endif

}  // namespace
}  // namespace ember

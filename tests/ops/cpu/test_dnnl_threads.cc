// dnnl_threads_for: the thread count a oneDNN primitive is created with (ops/cpu/
// dnnl_util.h). Tiny primitives run on the calling thread; the rest get the session's.
#include "ops/cpu/dnnl_util.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

TEST(DnnlThreads, APrimitiveOfAFewThousandOperationsRunsOnTheCallingThread) {
  EXPECT_EQ(dnnl_threads_for(2, 0), 1);                    // an empty product
  EXPECT_EQ(dnnl_threads_for(8, 2.0 * 64 * 3 * 64), 1);    // a 64-channel 1-D conv, 1 output, kernel 3
  EXPECT_EQ(dnnl_threads_for(8, 65535), 1);
}

TEST(DnnlThreads, LargerPrimitivesGetTheSessionsThreads) {
  EXPECT_EQ(dnnl_threads_for(8, 65536), 8);
  EXPECT_EQ(dnnl_threads_for(2, 2.0 * 960 * 240), 2);  // MobileNetV3's widest squeeze-excite conv
  EXPECT_EQ(dnnl_threads_for(1, 1e9), 1);
}

}  // namespace
}  // namespace ember

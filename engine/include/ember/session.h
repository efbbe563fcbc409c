// ember::Session — load a model once, run it many times, from many threads at once.
#pragma once

#include <ember/log.h>
#include <ember/profile.h>
#include <ember/core/cancel.h>
#include <ember/core/tensor.h>
#include <ember/core/value.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ember {

// Which graph passes run when a session is made. None: the graph as the file has it.
// Basic: constant folding and dead-code removal, which change no node's arithmetic.
// All: also the fusions and layout passes (Conv+BatchNorm, bias/activation epilogues,
// GELU, attention, elementwise regions, channels-last on the CPU).
enum class GraphOptimization { None, Basic, All };

struct SessionOptions {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  int num_threads = 0;         // intra-op threads per run; 0 = every core
  GraphOptimization optimization = GraphOptimization::All;
  // Lines at log_level and below go to log_sink (stderr, "ember: warning: ...", when it
  // is empty). LogLevel::None silences the session. Debug says what each new plan is.
  LogLevel log_level = LogLevel::Warning;
  LogSink log_sink = nullptr;
  // "fp32"; "fp16": the float32 computation runs in float16 (tensor cores on CUDA,
  // float32 accumulation); "bf16" (CPU with AVX512_BF16): convolutions and matrix
  // products take bfloat16 operands and accumulate in float32, everything else stays
  // float32. Inputs and outputs are float32 either way.
  std::string precision = "fp32";
  // CUDA: record the device work of a run once per input shape and replay it as a
  // CUDA graph (one launch instead of one per node).
  bool cuda_graph = false;
  // Plans are made per input-shape signature and cached, least recently used evicted
  // beyond either limit (an evicted plan's arena memory is given back). Bytes count a
  // plan's arenas, the constants folded for its shapes and the heap its kernels took
  // (oneDNN's primitives and generated code: about 3 MiB per BERT-base sequence length).
  // The count matters as much: at 8, BERT-base walked over every length stays within 6% of the
  // memory of its longest length alone, and a new length's first run costs little more
  // than a steady one (README, "Memory a service can live with").
  size_t plan_cache_max_plans = 8;
  size_t plan_cache_max_bytes = size_t{1} << 30;
};

// Memory a session holds on one device.
struct DeviceMemory {
  std::string device;       // "cuda:0", "cpu"
  size_t weight_bytes = 0;  // weights uploaded to the device (0 on the host: they stay in the model)
  size_t in_use_bytes = 0;  // weights + run arenas now
  size_t peak_bytes = 0;    // the most held at once so far
  size_t allocations = 0;   // allocations made so far (steady-state runs add none)
};

// A graph input or output as the model declares it. Symbolic dims ("batch") are kept
// by name; unknown dims are "?".
struct ValueDesc {
  std::string name;
  DType dtype = DType::Undefined;  // of the tensor, or of a sequence's or optional's tensors
  // ONNX's type with ember's dtype names: "tensor(float32)", "seq(tensor(int64))",
  // "optional(seq(tensor(float32)))". Only the tensor ones run through run(); a model
  // with sequences or optionals among its inputs or outputs runs through run_values().
  std::string type;
  std::vector<std::string> dims;
  // An integer input that indexes a constant table (token ids into an embedding) must
  // stay below this: the table's size. 0: no such use seen.
  int64_t index_bound = 0;
};

// What a session holds, in bytes, per device and purpose.
struct MemoryReport {
  struct Entry {
    std::string device;   // "cpu", "cuda:0"
    std::string purpose;  // "weights", "packed weights", "arenas", "plan constants", "plan kernels"
    size_t bytes = 0;
  };
  std::vector<Entry> entries;
  size_t plans = 0;           // plans cached now
  size_t plans_evicted = 0;   // so far
  // The whole process's resident memory when the report was made: what the entries
  // leave out is code, libraries and allocator overhead.
  size_t process_resident_bytes = 0;

  size_t total() const;
  std::string to_string() const;  // one line per entry, then the process
};

// What the model file says about itself (besides its inputs and outputs).
struct ModelMetadata {
  std::map<std::string, int64_t> opset_imports;  // domain ("" is the standard one) -> version
  int64_t ir_version = 0;
  std::string producer_name, producer_version;  // "pytorch", "2.3.0"
  std::string domain;                           // the model's own, "com.example"
  int64_t model_version = 0;
  std::string doc_string;
  std::string graph_name, graph_doc_string;
  std::map<std::string, std::string> metadata_props;  // free-form key/value pairs
};

struct RunOptions {
  Profile* profile = nullptr;  // when set, filled with one entry per executed node
  // When set, another thread may cancel the run: it then raises RunCancelled at the
  // next check (between nodes, between iterations of Loop, Scan and RNN/GRU/LSTM).
  const CancelToken* cancel = nullptr;
  // A run still going at this time raises DeadlineExceeded at its next check; one that
  // starts after it raises before doing any work. max(): no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // CUDA sessions: the caller's stream (a cudaStream_t on the session's GPU). The run's
  // GPU work starts after the work already queued there, and work the caller queues
  // there afterwards starts after the run's. When every output is on the GPU (and no
  // profile is asked for), run() returns once the work is queued, without waiting for
  // the GPU: read the outputs through this stream. An error the GPU raises later is
  // reported by a later run or synchronization. nullptr: the run waits for its work.
  void* cuda_stream = nullptr;
};

// Every operator ember has a kernel for on a device kind ("cpu", "cuda"), sorted;
// ops of other domains than the standard one are written "domain::Op".
std::vector<std::string> list_operators(const std::string& device = "cpu");

class Session {
 public:
  // A model file; external data is read from the file's folder.
  explicit Session(const std::string& model_path, SessionOptions options = {});
  // A model already in memory (the bytes of a .onnx file; read once, not kept).
  // Tensors stored as external data are read from `external_data_dir`; with none ("")
  // a model that has some is refused with an error naming the tensor.
  static Session from_bytes(std::span<const std::byte> model, SessionOptions options = {},
                            const std::string& external_data_dir = "");
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<ValueDesc>& inputs() const;
  const std::vector<ValueDesc>& outputs() const;
  const ModelMetadata& metadata() const;

  // Inputs by name; returns the outputs in graph order. Thread-safe.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs,
                          const RunOptions& run_options = {});
  // Inputs by name, any of which may be a sequence or optional (ember::Value: a tensor,
  // a sequence, or none for an empty optional); returns every output in graph order.
  // Any model runs here; sequences and optionals run on the host, node by node.
  std::vector<Value> run_values(const std::vector<std::pair<std::string, Value>>& inputs,
                                const RunOptions& run_options = {});
  // Inputs and caller-allocated outputs, both in graph order. With outputs of the
  // right shapes this path allocates nothing once the plan for these shapes exists.
  // Inputs and outputs may be on the session's GPU (Tensor::view(..., {Cuda, N}) over
  // device memory the caller owns): they are then read and written there, with no
  // host copy.
  // An output whose shape depends on the input data (after NonZero, Loop, ...) is
  // replaced by a new tensor.
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
           const RunOptions& run_options = {});
  // Output tensors of the dtypes and shapes the graph produces for these inputs
  // (plans them if needed), to pass to run() again and again.
  std::vector<Tensor> make_outputs(std::span<const Tensor> inputs);

  // A copy of host tensor `host` in the memory of the session's device: its GPU for a
  // CUDA session (the host for a CPU session). Pass it to run() as an input, or as an
  // output to be written there, so runs move no bytes to or from the host. Its memory
  // is freed with the last Tensor that shares it, which must go before the session.
  Tensor to_device(const Tensor& host) const;
  // A host copy of `tensor`, which is on the host or the session's device.
  Tensor to_host(const Tensor& tensor) const;

  // Human-readable plan for these inputs: devices, kernels, copies, arena offsets.
  std::string explain(std::span<const Tensor> inputs);

  // Memory held per device (every device the session runs on).
  std::vector<DeviceMemory> memory() const;
  // Memory held, by device and purpose.
  MemoryReport memory_report() const;

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember

// ember._ember: the Python module's extension, over ember's public API (<ember/ember.h>)
// only. python/ember/__init__.py re-exports it; python/ember/__init__.pyi is its stub.
//
// Arrays cross without copies where they can: a C-contiguous input of the declared
// dtype is viewed in place (numpy's buffer or any object's __dlpack__), and each output
// is a numpy array over the ember tensor's own memory, kept alive by the array.
#include <ember/ember.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using nb::dlpack::dtype_code;

// ember's element types that numpy (and DLPack) have: the others cannot cross.
std::optional<nb::dlpack::dtype> to_dlpack(ember::DType d) {
  auto make = [](dtype_code code, int bits) { return nb::dlpack::dtype{uint8_t(code), uint8_t(bits), 1}; };
  switch (d) {
    case ember::DType::Float32: return make(dtype_code::Float, 32);
    case ember::DType::Float64: return make(dtype_code::Float, 64);
    case ember::DType::Float16: return make(dtype_code::Float, 16);
    case ember::DType::Int8: return make(dtype_code::Int, 8);
    case ember::DType::Int16: return make(dtype_code::Int, 16);
    case ember::DType::Int32: return make(dtype_code::Int, 32);
    case ember::DType::Int64: return make(dtype_code::Int, 64);
    case ember::DType::UInt8: return make(dtype_code::UInt, 8);
    case ember::DType::UInt16: return make(dtype_code::UInt, 16);
    case ember::DType::UInt32: return make(dtype_code::UInt, 32);
    case ember::DType::UInt64: return make(dtype_code::UInt, 64);
    case ember::DType::Bool: return make(dtype_code::Bool, 8);
    default: return std::nullopt;
  }
}

std::optional<ember::DType> from_dlpack(nb::dlpack::dtype t) {
  for (ember::DType d : {ember::DType::Float32, ember::DType::Float64, ember::DType::Float16,
                         ember::DType::Int8, ember::DType::Int16, ember::DType::Int32,
                         ember::DType::Int64, ember::DType::UInt8, ember::DType::UInt16,
                         ember::DType::UInt32, ember::DType::UInt64, ember::DType::Bool})
    if (to_dlpack(d) == t) return d;
  return std::nullopt;
}

std::string describe_dlpack(nb::dlpack::dtype t) {
  const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string kind = t.code < 7 ? kinds[t.code] : "code " + std::to_string(t.code);
  return kind + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

// A graph input or output as Python sees it: numpy dtype, dims as int / str / None.
struct ValueInfo {
  std::string name;
  nb::object dtype;  // numpy.dtype, or ember's name for a type numpy lacks ("bfloat16")
  nb::list shape;
  int64_t index_bound = 0;
  std::string type;  // "tensor(float32)", "seq(tensor(float32))", "optional(...)"
};

ValueInfo value_info(const ember::ValueDesc& d) {
  ValueInfo v{d.name, nb::str(ember::dtype_name(d.dtype)), nb::list(), d.index_bound, d.type};
  if (to_dlpack(d.dtype)) v.dtype = nb::module_::import_("numpy").attr("dtype")(v.dtype);
  for (const std::string& dim : d.dims) {
    if (dim == "?")
      v.shape.append(nb::none());
    else if (!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos)
      v.shape.append(nb::int_(std::stoll(dim)));
    else
      v.shape.append(nb::str(dim.c_str()));
  }
  return v;
}

// The log sink holds a Python callable that ember may copy and call from any thread:
// the callable lives in one shared holder (copies touch no Python reference count),
// and every call and the final release take the GIL. The Session shows the callable to
// Python's garbage collector, which may clear it (see session_traverse).
struct PythonLog {
  nb::object fn;
  ~PythonLog() {
    nb::gil_scoped_acquire gil;
    fn.reset();
  }
};

std::shared_ptr<PythonLog> python_log(nb::object fn) {
  if (fn.is_none()) return nullptr;
  auto holder = std::make_shared<PythonLog>();
  holder->fn = std::move(fn);
  return holder;
}

ember::LogSink log_sink(std::shared_ptr<PythonLog> holder) {
  return [holder](ember::LogLevel level, std::string_view line) {
    nb::gil_scoped_acquire gil;
    if (!holder->fn.is_valid()) return;  // cleared by the garbage collector
    try {
      holder->fn(ember::log_level_name(level), nb::str(line.data(), line.size()));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("ember log callback");  // a log line must not fail the run
    }
  };
}

template <class Enum, size_t N>
Enum parse_choice(const char* what, const std::string& value, const std::pair<const char*, Enum> (&choices)[N]) {
  std::string names;
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw ember::Error(std::string(what) + " '" + value + "' is not valid: expected " + names);
}

// A string input (a numpy str array, an object array of str, a list of str) as an
// ember string tensor: a copy, each element as UTF-8.
ember::Tensor to_string_tensor(const std::string& name, nb::handle value) {
  nb::object array = nb::module_::import_("numpy").attr("asarray")(value);
  const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
  if (kind != "U" && kind != "O")
    throw ember::Error("input '" + name + "' is a string tensor: pass str values (a numpy str array), not numpy dtype " +
                       nb::cast<std::string>(array.attr("dtype").attr("str")));
  ember::Shape shape;
  for (nb::handle d : array.attr("shape")) shape.push_back(nb::cast<int64_t>(d));
  ember::Tensor t(ember::DType::String, shape);
  int64_t i = 0;
  for (nb::handle element : array.attr("ravel")().attr("tolist")()) {
    if (!nb::isinstance<nb::str>(element))
      throw ember::Error("input '" + name + "' is a string tensor, but element " + std::to_string(i) + " is a " +
                         nb::type_name(element.type()).c_str() + ", not a str");
    t.data_as<std::string>()[i++] = nb::cast<std::string>(element);
  }
  return t;
}

// A string output as a numpy str array (text that is not UTF-8 decodes with U+FFFD).
nb::object to_numpy_strings(const ember::Tensor& t) {
  nb::list items;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const std::string& s = t.data_as<std::string>()[i];
    items.append(nb::steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace")));
  }
  nb::list shape;
  for (int64_t d : t.shape()) shape.append(d);
  return nb::module_::import_("numpy").attr("array")(items, "dtype"_a = nb::str("str")).attr("reshape")(nb::tuple(shape));
}

// An input value as an ember tensor viewing its memory. `keep` holds what the view
// reads until the run is over. String inputs are copied (to_string_tensor).
ember::Tensor to_tensor(const std::string& name, nb::handle value, const ember::ValueDesc* declared,
                        std::vector<nb::ndarray<nb::ro>>& keep) {
  if (declared && declared->dtype == ember::DType::String) return to_string_tensor(name, value);
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(value, array, /*convert=*/false)) {
    // Not an array (a list, a scalar): one numpy conversion to the declared dtype.
    nb::object numpy = nb::module_::import_("numpy");
    nb::object converted;
    try {
      converted = declared && to_dlpack(declared->dtype)
                      ? numpy.attr("asarray")(value, "dtype"_a = ember::dtype_name(declared->dtype))
                      : numpy.attr("asarray")(value);
    } catch (nb::python_error& e) {
      throw ember::Error("input '" + name + "' is not an array and numpy cannot make one of it: " + e.what());
    }
    if (!nb::try_cast(converted, array, false))
      throw ember::Error("input '" + name + "': a " + nb::type_name(value.type()).c_str() +
                         " of numpy dtype " + nb::str(converted.attr("dtype")).c_str() +
                         " has no ember element type");
  }
  // C-contiguous, ignoring the strides of size-1 dims (which carry no meaning).
  bool contiguous = true;
  for (int64_t i = int64_t(array.ndim()) - 1, expect = 1; i >= 0; --i) {
    if (array.shape(i) != 1 && array.stride(i) != expect) contiguous = false;
    expect *= int64_t(array.shape(i));
  }
  const bool on_cpu = array.device_type() == nb::device::cpu::value;
  if (!contiguous) {
    if (!on_cpu)
      throw ember::Error("input '" + name + "' is a strided device array: make it contiguous first");
    // One copy into C order, made by numpy from what the value offers (DLPack, or the
    // buffer protocol through which nanobind read it).
    nb::object numpy = nb::module_::import_("numpy");
    nb::object source = nb::hasattr(value, "__dlpack__") ? numpy.attr("from_dlpack")(value) : numpy.attr("asarray")(value);
    if (!nb::try_cast(numpy.attr("ascontiguousarray")(source), array, false))
      throw ember::Error("input '" + name + "': numpy could not make a C-contiguous copy of it");
  }
  const std::optional<ember::DType> dtype = from_dlpack(array.dtype());
  if (!dtype)
    throw ember::Error("input '" + name + "' has element type " + describe_dlpack(array.dtype()) +
                       ", which ember does not take");
  ember::Device device;
  if (array.device_type() == nb::device::cuda::value)
    device = {ember::DeviceKind::Cuda, int(array.device_id())};
  else if (!on_cpu)
    throw ember::Error("input '" + name + "' is on DLPack device type " +
                       std::to_string(array.device_type()) + ": ember takes CPU and CUDA arrays");
  ember::Shape shape(array.shape_ptr(), array.shape_ptr() + array.ndim());
  keep.push_back(array);
  return ember::Tensor::view(*dtype, std::move(shape), const_cast<void*>(array.data()), device);
}

// An output as a numpy array over the tensor's memory; the array owns a copy of the
// Tensor handle (which shares the memory, not the elements).
nb::object to_numpy(const std::string& name, const ember::Tensor& t) {
  if (t.dtype() == ember::DType::String) return to_numpy_strings(t);
  const std::optional<nb::dlpack::dtype> dtype = to_dlpack(t.dtype());
  if (!dtype)
    throw ember::Error("output '" + name + "' is " + ember::dtype_name(t.dtype()) +
                       ", which numpy has no type for");
  if (t.device().kind != ember::DeviceKind::Cpu)
    throw ember::Error("output '" + name + "' is on " + t.device().to_string() + ", not on the host");
  auto* owned = new ember::Tensor(t);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<ember::Tensor*>(p); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  return nb::ndarray<nb::numpy>(owned->data(), shape.size(), shape.data(), owner, nullptr, *dtype).cast();
}

// "seq(tensor(float32))" -> "tensor(float32)": what a sequence or optional holds.
std::string_view inner_type(std::string_view type) {
  const size_t open = type.find('(');
  return type.substr(open + 1, type.size() - open - 2);
}

// A map input from a dict: keys int or str (as the model declares), values of the
// declared dtype (float, int or str).
ember::Value to_map(const std::string& name, nb::handle value, const ember::ValueDesc* declared) {
  if (!nb::isinstance<nb::dict>(value))
    throw ember::Error("input '" + name + "' is a map: pass a dict, not " + nb::type_name(value.type()).c_str());
  const bool int_keys = declared && declared->type.find("map(int64") != std::string::npos;
  const ember::DType dtype = declared ? declared->dtype : ember::DType::Float32;
  nb::dict d = nb::borrow<nb::dict>(value);
  const auto n = static_cast<int64_t>(d.size());
  ember::Tensor keys(int_keys ? ember::DType::Int64 : ember::DType::String, {n}), values(dtype, {n});
  int64_t i = 0;
  try {
    for (auto [k, v] : d) {
      if (int_keys) keys.data_as<int64_t>()[i] = nb::cast<int64_t>(k);
      else keys.data_as<std::string>()[i] = nb::cast<std::string>(k);
      switch (dtype) {
        case ember::DType::Float32: values.data_as<float>()[i] = nb::cast<float>(v); break;
        case ember::DType::Float64: values.data_as<double>()[i] = nb::cast<double>(v); break;
        case ember::DType::Int64: values.data_as<int64_t>()[i] = nb::cast<int64_t>(v); break;
        case ember::DType::String: values.data_as<std::string>()[i] = nb::cast<std::string>(v); break;
        default: throw ember::Error(std::string("maps of ") + ember::dtype_name(dtype) + " values are not supported");
      }
      ++i;
    }
  } catch (const nb::cast_error&) {
    throw ember::Error("input '" + name + "' is a " + declared->type + ": entry " + std::to_string(i) +
                       " has a key or value of another type");
  }
  return ember::Value::map(std::move(keys), std::move(values));
}

// A map output as a dict.
nb::dict from_map(const ember::Value& v) {
  nb::dict d;
  const ember::Tensor& keys = v.map_keys();
  const ember::Tensor& values = v.map_values();
  for (int64_t i = 0; i < keys.numel(); ++i) {
    nb::object key = keys.dtype() == ember::DType::String ? nb::object(nb::str(keys.data_as<std::string>()[i].c_str()))
                                                          : nb::object(nb::int_(keys.data_as<int64_t>()[i]));
    switch (values.dtype()) {
      case ember::DType::Float32: d[key] = nb::float_(values.data_as<float>()[i]); break;
      case ember::DType::Float64: d[key] = nb::float_(values.data_as<double>()[i]); break;
      case ember::DType::Int64: d[key] = nb::int_(values.data_as<int64_t>()[i]); break;
      case ember::DType::String: d[key] = nb::str(values.data_as<std::string>()[i].c_str()); break;
      default: throw ember::Error(std::string("maps of ") + ember::dtype_name(values.dtype()) + " values are not supported");
    }
  }
  return d;
}

// A sequence or optional input as Python gives it: a list or tuple for a sequence,
// None for an empty optional; the tensors in it as run() takes tensors.
ember::Value to_value(const std::string& name, nb::handle value, const ember::ValueDesc* declared,
                      std::string_view type, std::vector<nb::ndarray<nb::ro>>& keep) {
  if (type.starts_with("optional(")) {
    if (value.is_none()) return ember::Value();
    type = inner_type(type);
  }
  if (type.starts_with("map(")) return to_map(name, value, declared);
  if (!type.starts_with("seq(")) return ember::Value(to_tensor(name, value, declared, keep));
  if (!nb::isinstance<nb::list>(value) && !nb::isinstance<nb::tuple>(value))
    throw ember::Error("input '" + name + "' is a " + std::string(type) + ": pass a list of arrays, not " +
                       nb::type_name(value.type()).c_str());
  std::vector<ember::Value> elements;
  for (nb::handle element : value) elements.push_back(to_value(name, element, declared, inner_type(type), keep));
  return ember::Value::sequence(std::move(elements), declared ? declared->dtype : ember::DType::Undefined);
}

// An output value for Python: an array, a list for a sequence, None for an empty optional.
nb::object from_value(const std::string& name, const ember::Value& v) {
  if (v.is_none()) return nb::none();
  if (v.is_tensor()) return to_numpy(name, v.tensor());
  if (v.is_map()) return from_map(v);
  nb::list elements;
  for (const ember::Value& e : v.elements()) elements.append(from_value(name, e));
  return elements;
}

std::chrono::steady_clock::time_point deadline_after(std::optional<double> timeout_s) {
  if (!timeout_s) return std::chrono::steady_clock::time_point::max();
  const double t = *timeout_s;
  if (!(t >= 0)) throw ember::Error("timeout " + std::to_string(t) + " is not valid: expected seconds >= 0");
  if (t > 1e9) return std::chrono::steady_clock::time_point::max();  // inf and the like: none
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(t));
}

class PySession {
 public:
  PySession(nb::handle model, const std::string& device, int threads, const std::string& precision,
            const std::string& optimization, const std::string& log_level, nb::object log,
            bool cuda_graph, size_t plan_cache_max_plans, size_t plan_cache_max_bytes,
            std::optional<std::string> external_data_dir)
      : log_(python_log(std::move(log))),
        session_(open(model, options(device, threads, precision, optimization, log_level, log_, cuda_graph,
                                     plan_cache_max_plans, plan_cache_max_bytes),
                      external_data_dir)) {
    for (const auto& d : session_->inputs()) inputs_.push_back(value_info(d));
    for (const auto& d : session_->outputs()) outputs_.push_back(value_info(d));
    for (const auto* list : {&session_->inputs(), &session_->outputs()})
      for (const auto& d : *list) passes_values_ = passes_values_ || !d.type.starts_with("tensor(");
  }

  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }

  nb::list run(std::optional<std::vector<std::string>> output_names, nb::dict feed,
               std::optional<double> timeout, const ember::CancelToken* cancel, ember::Profile* profile) {
    // Which outputs, checked before any work is done.
    std::vector<size_t> picked;
    const auto& outs = session_->outputs();
    if (!output_names) {
      for (size_t i = 0; i < outs.size(); ++i) picked.push_back(i);
    } else {
      for (const std::string& want : *output_names) {
        size_t i = 0;
        while (i < outs.size() && outs[i].name != want) ++i;
        if (i == outs.size()) {
          std::string names;
          for (const auto& o : outs) names += (names.empty() ? "" : ", ") + o.name;
          throw ember::Error("the model has no output named '" + want + "' (its outputs: " + names + ")");
        }
        picked.push_back(i);
      }
    }

    std::vector<nb::ndarray<nb::ro>> keep;
    std::vector<std::pair<std::string, ember::Value>> named;
    for (auto [key, value] : feed) {
      if (!nb::isinstance<nb::str>(key))
        throw nb::type_error(("input names must be str, got " + std::string(nb::type_name(key.type()).c_str())).c_str());
      std::string name = nb::cast<std::string>(key);
      const ember::ValueDesc* declared = nullptr;
      for (const auto& d : session_->inputs())
        if (d.name == name) declared = &d;
      ember::Value v = declared && !declared->type.starts_with("tensor(")
                           ? to_value(name, value, declared, declared->type, keep)
                           : ember::Value(to_tensor(name, value, declared, keep));
      named.emplace_back(std::move(name), std::move(v));
    }

    ember::RunOptions run_options;
    run_options.deadline = deadline_after(timeout);
    run_options.cancel = cancel;
    run_options.profile = profile;
    nb::list out;
    if (!passes_values_) {
      std::vector<std::pair<std::string, ember::Tensor>> tensors;
      for (auto& [name, v] : named) tensors.emplace_back(std::move(name), v.tensor());
      std::vector<ember::Tensor> results;
      {
        nb::gil_scoped_release no_gil;  // other Python threads run meanwhile
        results = session_->run(tensors, run_options);
      }
      for (size_t i : picked) out.append(to_numpy(outs[i].name, results[i]));
      return out;
    }
    std::vector<ember::Value> results;
    {
      nb::gil_scoped_release no_gil;
      results = session_->run_values(named, run_options);
    }
    for (size_t i : picked) out.append(from_value(outs[i].name, results[i]));
    return out;
  }

  nb::dict metadata() const {
    const ember::ModelMetadata& m = session_->metadata();
    nb::dict d;
    d["producer_name"] = m.producer_name;
    d["producer_version"] = m.producer_version;
    d["domain"] = m.domain;
    d["model_version"] = m.model_version;
    d["doc_string"] = m.doc_string;
    d["graph_name"] = m.graph_name;
    d["graph_doc_string"] = m.graph_doc_string;
    d["ir_version"] = m.ir_version;
    d["opset_imports"] = nb::cast(m.opset_imports);
    d["metadata_props"] = nb::cast(m.metadata_props);
    return d;
  }

  std::string memory_report() const { return session_->memory_report().to_string(); }

  // The log callable, for Python's garbage collector: a callable that reaches the Session
  // (a bound method of the object that holds it) makes a cycle only the collector can
  // break, and without this it never saw the Session's half of it (each such service
  // dropped leaked its whole session: 420 MiB for BERT).
  int traverse(visitproc visit, void* arg) const {
    if (log_ && log_->fn.is_valid()) Py_VISIT(log_->fn.ptr());
    return 0;
  }
  void clear_log() {
    if (log_) log_->fn.reset();
  }

 private:
  static ember::SessionOptions options(const std::string& device, int threads, const std::string& precision,
                                       const std::string& optimization, const std::string& log_level,
                                       const std::shared_ptr<PythonLog>& log, bool cuda_graph, size_t max_plans,
                                       size_t max_bytes) {
    using ember::GraphOptimization, ember::LogLevel;
    static const std::pair<const char*, GraphOptimization> optimizations[] = {
        {"none", GraphOptimization::None}, {"basic", GraphOptimization::Basic}, {"all", GraphOptimization::All}};
    static const std::pair<const char*, LogLevel> levels[] = {
        {"none", LogLevel::None}, {"error", LogLevel::Error}, {"warning", LogLevel::Warning},
        {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
    ember::SessionOptions o;
    o.device = device;
    o.num_threads = threads;
    o.precision = precision;
    o.optimization = parse_choice("optimization", optimization, optimizations);
    o.log_level = parse_choice("log_level", log_level, levels);
    if (log) o.log_sink = log_sink(log);
    o.cuda_graph = cuda_graph;
    o.plan_cache_max_plans = max_plans;
    o.plan_cache_max_bytes = max_bytes;
    return o;
  }

  // A path (str or os.PathLike) or the bytes of a model (any buffer: bytes, bytearray,
  // memoryview, a numpy uint8 array). Loading runs without the GIL.
  static std::unique_ptr<ember::Session> open(nb::handle model, ember::SessionOptions options,
                                              const std::optional<std::string>& external_data_dir) {
    if (PyObject_CheckBuffer(model.ptr())) {
      Py_buffer view;
      if (PyObject_GetBuffer(model.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
      std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&view, PyBuffer_Release);
      std::span<const std::byte> bytes(static_cast<const std::byte*>(view.buf), size_t(view.len));
      nb::gil_scoped_release no_gil;
      return std::make_unique<ember::Session>(
          ember::Session::from_bytes(bytes, std::move(options), external_data_dir.value_or("")));
    }
    PyObject* fs_path = PyOS_FSPath(model.ptr());  // str, bytes, or TypeError
    if (!fs_path) {
      PyErr_Clear();
      throw nb::type_error(("model must be a path (str, os.PathLike) or the model's bytes, got " +
                            std::string(nb::type_name(model.type()).c_str())).c_str());
    }
    nb::object path = nb::steal(fs_path);
    std::string file = nb::isinstance<nb::bytes>(path) ? std::string(nb::cast<nb::bytes>(path).c_str())
                                                       : nb::cast<std::string>(path);
    if (external_data_dir)
      throw ember::Error("external_data_dir is for a model given as bytes: a model file's external data "
                         "is read from the file's folder");
    nb::gil_scoped_release no_gil;
    return std::make_unique<ember::Session>(file, std::move(options));
  }

  std::shared_ptr<PythonLog> log_;  // before session_: its sink holds it
  std::unique_ptr<ember::Session> session_;
  std::vector<ValueInfo> inputs_, outputs_;
  bool passes_values_ = false;  // a sequence or optional among the inputs or outputs: run_values
};

nb::list devices() {
  nb::list names;
  names.append("cpu");
  for (const ember::GpuInfo& g : ember::list_gpus().gpus) names.append("cuda:" + std::to_string(g.index));
  return names;
}

nb::dict gpu_report() {
  const ember::GpuReport r = ember::list_gpus();
  nb::dict d;
  d["cuda_built"] = r.cuda_built;
  d["problem"] = r.problem;
  d["driver_version"] = r.driver_version;
  d["runtime_version"] = r.runtime_version;
  d["cudnn_version"] = r.cudnn_version;
  d["cublas_version"] = r.cublas_version;
  nb::list gpus;
  for (const ember::GpuInfo& g : r.gpus) {
    nb::dict gpu;
    gpu["index"] = g.index;
    gpu["name"] = g.name;
    gpu["total_bytes"] = g.total_bytes;
    gpu["free_bytes"] = g.free_bytes;
    gpu["compute_capability"] = nb::make_tuple(g.compute_major, g.compute_minor);
    gpus.append(gpu);
  }
  d["gpus"] = gpus;
  return d;
}

}  // namespace

// Python's garbage collector's view of a Session: the log callable it holds.
int session_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));  // a heap type's instances visit their type
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<PySession>(self)->traverse(visit, arg);
}

int session_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<PySession>(self)->clear_log();
  return 0;
}

PyType_Slot session_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(session_traverse)},
                               {Py_tp_clear, reinterpret_cast<void*>(session_clear)},
                               {0, nullptr}};

NB_MODULE(_ember, m) {
  m.doc() = "ember, an ONNX inference engine (the compiled part of the `ember` package)";
  m.attr("__version__") = EMBER_VERSION;

  // Translators are tried newest first, so the most derived is registered last.
  nb::exception<ember::Error> error(m, "Error", PyExc_RuntimeError);
  error.doc() = "Raised for anything ember refuses or fails at: a bad model file, a wrong input "
                "(name, dtype, shape), an unknown option or device. The message names the thing "
                "and what was expected.";
  nb::exception<ember::RunStopped> stopped(m, "RunStopped", error);
  stopped.doc() = "A run stopped before its end (cancelled, or past its timeout); the session stays usable.";
  nb::exception<ember::RunCancelled>(m, "RunCancelled", stopped).doc() =
      "The run's CancelToken was cancelled.";
  nb::exception<ember::DeadlineExceeded>(m, "DeadlineExceeded", stopped).doc() =
      "The run passed its timeout.";

  nb::class_<ValueInfo>(m, "ValueInfo", "A graph input or output as the model declares it.")
      .def_ro("name", &ValueInfo::name)
      .def_ro("dtype", &ValueInfo::dtype, nb::sig("def dtype(self) -> numpy.dtype | str"),
              "numpy.dtype; a str for the types numpy lacks ('bfloat16', 'float8e4m3fn', ...)")
      .def_ro("shape", &ValueInfo::shape, nb::sig("def shape(self) -> list[int | str | None]"),
              "Dims: int when fixed, str when symbolic ('batch'), None when unknown")
      .def_ro("index_bound", &ValueInfo::index_bound,
              "For integer inputs that index a table (token ids): the table's size; 0 if none")
      .def_ro("type", &ValueInfo::type,
              "ONNX's type with ember's dtype names: 'tensor(float32)', 'seq(tensor(int64))', "
              "'optional(tensor(float32))'. A sequence is a list of arrays, an empty optional None")
      .def("__repr__", [](const ValueInfo& v) -> std::string {
        return "ValueInfo(name=" + std::string(nb::repr(nb::str(v.name.c_str())).c_str()) + ", dtype=" +
               nb::str(v.dtype).c_str() + ", shape=" + nb::repr(v.shape).c_str() + ")";
      });

  nb::class_<ember::CancelToken>(m, "CancelToken",
      "Stops the runs given it (run(..., cancel=token)) from another thread: they raise "
      "RunCancelled at their next check (between nodes). reset() makes it usable again.")
      .def(nb::init<>())
      .def("cancel", &ember::CancelToken::cancel)
      .def("reset", &ember::CancelToken::reset)
      .def_prop_ro("cancelled", &ember::CancelToken::cancelled);

  nb::class_<ember::Profile>(m, "Profile",
      "Where the time of runs went, node by node: pass one to run(..., profile=p); it "
      "accumulates over runs. Give each thread its own.")
      .def(nb::init<>())
      .def_ro("runs", &ember::Profile::runs)
      .def_ro("total_ns", &ember::Profile::total_ns, "Wall time of the runs, summed")
      .def("table", &ember::Profile::table, "Per node: mean time per run and share, slowest first")
      .def("chrome_trace", &ember::Profile::chrome_trace,
           "Chrome trace event JSON (open in https://ui.perfetto.dev or chrome://tracing)");

  nb::class_<PySession>(m, "Session",
      "A model loaded once and run many times, from many threads at once (run() releases the GIL).\n\n"
      "model: a path (str or os.PathLike) or the bytes of a .onnx file (bytes, bytearray, memoryview).\n"
      "device: 'cpu', 'cuda' or 'cuda:N'. threads: intra-op threads per run, 0 = every core.\n"
      "precision: 'fp32', 'fp16' or 'bf16' (inputs and outputs stay float32).\n"
      "optimization: 'none', 'basic' or 'all' graph passes. log_level: 'none', 'error', "
      "'warning', 'info' or 'debug'; log: a callable(level, line) instead of stderr (called "
      "from the thread that logs, with the GIL).\n"
      "cuda_graph: replay each input shape's device work as a CUDA graph.\n"
      "plan_cache_max_plans / plan_cache_max_bytes: the per-input-shape plan cache's bounds.\n"
      "external_data_dir: where a model given as bytes finds its external data.\n"
      "Raises ember.Error for a bad model, option or device.", nb::type_slots(session_slots))
      .def(nb::init<nb::handle, const std::string&, int, const std::string&, const std::string&,
                    const std::string&, nb::object, bool, size_t, size_t, std::optional<std::string>>(),
           "model"_a, nb::kw_only(), "device"_a = "cpu", "threads"_a = 0, "precision"_a = "fp32",
           "optimization"_a = "all", "log_level"_a = "warning", "log"_a = nb::none(), "cuda_graph"_a = false,
           "plan_cache_max_plans"_a = 8, "plan_cache_max_bytes"_a = size_t{1} << 30,
           "external_data_dir"_a = nb::none(),
           nb::sig("def __init__(self, model: str | os.PathLike[str] | bytes | bytearray | memoryview, *, "
                   "device: str = 'cpu', threads: int = 0, precision: str = 'fp32', optimization: str = 'all', "
                   "log_level: str = 'warning', log: collections.abc.Callable[[str, str], None] | None = None, "
                   "cuda_graph: bool = False, plan_cache_max_plans: int = 8, "
                   "plan_cache_max_bytes: int = 1073741824, external_data_dir: str | None = None) -> None"))
      .def_prop_ro("inputs", &PySession::inputs, "The graph inputs, in order")
      .def_prop_ro("outputs", &PySession::outputs, "The graph outputs, in order")
      .def_prop_ro("metadata", &PySession::metadata, nb::sig("def metadata(self) -> dict[str, typing.Any]"),
                   "What the model file says about itself: producer, versions, opsets, doc strings, "
                   "metadata_props")
      .def("memory_report", &PySession::memory_report, "Bytes held per device and purpose, one line each")
      .def("run", &PySession::run, "output_names"_a.none(), "inputs"_a, nb::kw_only(),
           "timeout"_a = nb::none(), "cancel"_a = nb::none(), "profile"_a = nb::none(),
           nb::sig("def run(self, output_names: collections.abc.Sequence[str] | None, "
                   "inputs: collections.abc.Mapping[str, numpy.typing.ArrayLike], *, "
                   "timeout: float | None = None, cancel: CancelToken | None = None, "
                   "profile: Profile | None = None) -> list[numpy.ndarray]"),
           "Runs the model; returns the outputs named (all, in graph order, for None) as numpy arrays.\n\n"
           "inputs maps every graph input's name to an array: a numpy array, or any object with "
           "__dlpack__ (a torch tensor, also on the session's GPU, where it must be ready: the run does not "
           "wait for its producer's stream). One that is C-contiguous is read "
           "in place, without a copy; a strided CPU array is copied once into C order. Its dtype must "
           "be the declared one (no casting: float64 for a float32 input is an ember.Error). "
           "A list or a scalar is converted once with numpy.asarray(value, dtype=<declared>).\n"
           "Outputs are numpy arrays over ember's own memory (no copy); torch.from_dlpack takes them.\n"
           "timeout: seconds; a run still going then raises DeadlineExceeded. cancel: a CancelToken "
           "(RunCancelled). profile: a Profile to fill. The GIL is released while the model runs.\n"
           "Raises ember.Error for an unknown, missing or extra input, a wrong dtype or shape.");

  m.def("devices", &devices, nb::sig("def devices() -> list[str]"), "The devices a Session can take: 'cpu', then 'cuda:N' for each usable GPU");
  m.def("gpu_report", &gpu_report, nb::sig("def gpu_report() -> dict[str, typing.Any]"),
        "The GPUs in detail: versions, memory, compute capability, and 'problem': why none can be "
        "used (no driver, no CUDA backend in this build, ...), empty when some can");
  m.def("list_operators", &ember::list_operators, "device"_a = "cpu",
        "Every operator ember has a kernel for on 'cpu' or 'cuda', sorted");
}

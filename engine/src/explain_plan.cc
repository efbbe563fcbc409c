#include "engine/src/planner.h"

#include <sstream>

namespace ember {

namespace {

std::string where(const Plan& plan, int id) {
  if (id < 0) return "-";
  const PlannedValue& v = plan.values[id];
  // float32 goes unsaid; other types (bfloat16 between bf16 convolutions, int64
  // indices) are named, since they change the bytes a value takes.
  const bool f32 = v.type.dtype == DType::Float32;
  std::string s = v.name + shape_to_string(v.type.shape) + (f32 ? "" : std::string(" ") + dtype_name(v.type.dtype)) + "@";
  switch (v.storage) {
    case Storage::Arena: return s + v.device.to_string() + "+" + std::to_string(v.offset);
    case Storage::Constant: return s + "const";
    case Storage::Input: return s + "input" + std::to_string(v.io_index);
    case Storage::Output: return s + "output" + std::to_string(v.io_index);
  }
  return s;
}

std::string format_bytes(size_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  if (bytes >= (1u << 20)) os << bytes / 1048576.0 << " MiB";
  else if (bytes >= 1024) os << bytes / 1024.0 << " KiB";
  else os << bytes << " B";
  return os.str();
}

void explain_steps(std::ostringstream& os, const Plan& plan, const std::string& indent) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlannedStep& step = plan.steps[s];
    os << indent << "#" << s << " " << step.device.to_string() << " " << step.node_label << " [" << step.kernel << "]";
    if (const char* variant = step.kernel_impl ? step.kernel_impl->variant() : nullptr) os << " as " << variant;
    os << "\n" << indent << "    in:";
    for (int id : step.inputs) os << " " << where(plan, id);
    os << "\n" << indent << "    out:";
    for (int id : step.outputs) os << " " << where(plan, id);
    if (step.workspace_bytes)
      os << "\n" << indent << "    workspace: " << step.workspace_bytes << " B at +" << step.workspace_offset;
    os << "\n";
    for (const auto& [name, sub, error] : step.subplans) {
      if (!sub) {
        os << indent << "    " << name << ": cannot run at these shapes (raises if taken): " << error << "\n";
        continue;
      }
      os << indent << "    " << name << ": " << sub->steps.size() << " steps, " << sub->folded.size()
         << " values folded, arena " << format_bytes(sub->arena_size(Device{})) << " in the workspace\n";
      explain_steps(os, *sub, indent + "      ");
      for (const auto& note : sub->notes) os << indent << "      note: " << note << "\n";
    }
  }
}

}  // namespace

std::string explain_plan(const Plan& plan) {
  std::ostringstream os;
  os << "plan for inputs";
  for (const auto& s : plan.input_shapes) os << " " << shape_to_string(s);
  os << ": " << plan.steps.size() << " steps, " << plan.folded.size() << " values folded before the run";
  if (plan.nodes_reused)
    os << ", " << plan.nodes_reused << " of " << plan.nodes_reused + plan.nodes_decided
       << " nodes as earlier plans of the session decided";
  os << "\n";
  explain_steps(os, plan, "  ");
  int copies = 0;
  for (const PlannedStep& step : plan.steps) copies += step.op_type == "Copy";
  for (const auto& e : plan.eager) os << "  eager " << e.node->label() << "\n";
  for (const auto& note : plan.notes) os << "  note: " << note << "\n";
  os << "copies inserted: " << copies << "\n";
  std::vector<Device> devices;
  for (const auto& [device, _] : plan.arena_bytes) devices.push_back(device);
  os << "nodes per device:";
  for (const Device& d : devices) os << " " << d.to_string() << " " << plan.node_steps_on(d);
  os << " (of " << plan.node_steps() << ")\n";
  for (const auto& [device, bytes] : plan.arena_bytes)
    os << "peak arena on " << device.to_string() << ": " << format_bytes(bytes) << "\n";
  return os.str();
}

}  // namespace ember

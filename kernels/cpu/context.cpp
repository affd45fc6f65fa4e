#include "kernels/cpu/context.h"

#include <algorithm>

namespace cnnbench::kernels::cpu {

Context::Context() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
  attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
}

void Context::note_scratchpad(int64_t bytes) { needed_ = std::max(needed_, bytes); }

void Context::allocate_scratchpad() {
  if (needed_ > scratchpad_.bytes()) scratchpad_ = HostArray<uint8_t>(needed_, "oneDNN scratchpad");
}

void* Context::scratchpad(int64_t bytes) {
  note_scratchpad(bytes);
  allocate_scratchpad();
  return scratchpad_.data();
}

}  // namespace cnnbench::kernels::cpu

// libFuzzer target for the safetensors header parser: any byte string must either parse into
// entries that lie inside the input, or throw lowbit::Error. Any other exception, a crash, or an
// out-of-bounds read (AddressSanitizer) is a finding. Built with clang and run for a bounded time
// by the CPU test suite (tests/fuzz/run_fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "lowbit/error.h"
#include "lowbit/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const lowbit::SafetensorsHeader header = lowbit::parse_safetensors_header(data, size, "fuzz input");
    for (const lowbit::SafetensorsEntry& entry : header.tensors) {
      // The parser promised: every tensor inside the data buffer, with its declared size.
      if (entry.data_end > size - header.data_offset || entry.data_begin > entry.data_end) {
        __builtin_trap();
      }
    }
  } catch (const lowbit::Error&) {
    // A clear rejection is the expected outcome for malformed input.
  }
  return 0;
}

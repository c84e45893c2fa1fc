// Scalar codecs between float32 and the narrow formats lowbit stores: fp8 e4m3fn, fp8 e5m2,
// e2m1 (fp4), ue8m0 (power-of-two scales), bf16 and fp16. Usable on host and device; the
// spec (rounding, saturation, NaN codes) is docs/formats.md, and every code path here is tested
// against CUDA's own cuda_fp8.h / cuda_fp4.h / cuda_bf16.h / cuda_fp16.h conversions.
//
// Rounding is round-to-nearest-even everywhere except ue8m0, which rounds toward zero or up.
// Saturation::kFinite clamps finite overflow and +-Inf to the largest finite value of the sign;
// NaN in gives the format's canonical NaN (sign dropped), as CUDA's converters do.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define LOWBIT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define LOWBIT_HOST_DEVICE inline
#endif

namespace lowbit {

enum class Saturation : std::uint8_t {
  kFinite,  // overflow and +-Inf -> +-max finite (CUDA __NV_SATFINITE)
  kNone,    // overflow -> Inf where the format has one, else NaN (CUDA __NV_NOSAT)
};

enum class ScaleRounding : std::uint8_t {
  kDown,  // toward zero: 2^floor(log2 |x|)
  kUp,    // toward +Inf: 2^ceil(log2 |x|), the choice for scales (never shrinks the range)
};

inline constexpr float kFP8E4M3Max = 448.0f;
inline constexpr float kFP8E5M2Max = 57344.0f;
inline constexpr float kE2M1Max = 6.0f;
inline constexpr float kInt8Max = 127.0f;

LOWBIT_HOST_DEVICE std::uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}

LOWBIT_HOST_DEVICE float bits_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

namespace detail {

// A binary floating-point format narrower than float32, described by its field widths.
struct MiniFloatSpec {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;           // IEEE-style: all-ones exponent with zero mantissa is Inf
  std::uint32_t max_code;      // magnitude code of the largest finite value
  std::uint32_t nan_code;      // canonical NaN (what NaN input encodes to)
  std::uint32_t infinity_code; // magnitude code of Inf (if has_infinity)
};

// Functions rather than variables: device code may call them but not read host globals.
LOWBIT_HOST_DEVICE constexpr MiniFloatSpec e4m3_spec() { return {4, 3, 7, false, 0x7E, 0x7F, 0}; }
LOWBIT_HOST_DEVICE constexpr MiniFloatSpec e5m2_spec() { return {5, 2, 15, true, 0x7B, 0x7F, 0x7C}; }
// e2m1 has neither Inf nor NaN; CUDA encodes NaN as +6 (code 0x7), and so do we.
LOWBIT_HOST_DEVICE constexpr MiniFloatSpec e2m1_spec() { return {2, 1, 1, false, 0x7, 0x7, 0}; }
LOWBIT_HOST_DEVICE constexpr MiniFloatSpec fp16_spec() {
  return {5, 10, 15, true, 0x7BFF, 0x7FFF, 0x7C00};
}
LOWBIT_HOST_DEVICE constexpr MiniFloatSpec bf16_spec() {
  return {8, 7, 127, true, 0x7F7F, 0x7FFF, 0x7F80};
}

// float32 -> narrow code, round-to-nearest-even, one rounding step.
LOWBIT_HOST_DEVICE std::uint32_t encode_minifloat(float value, MiniFloatSpec spec,
                                                  Saturation saturation) {
  const std::uint32_t bits = float_bits(value);
  const std::uint32_t sign_bit = 1u << (spec.exponent_bits + spec.mantissa_bits);
  const std::uint32_t sign = (bits >> 31) ? sign_bit : 0u;
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return spec.nan_code;
  const std::uint32_t overflow_code =
      saturation == Saturation::kFinite ? spec.max_code
      : spec.has_infinity               ? spec.infinity_code
                                        : spec.nan_code;
  if (magnitude == 0x7F800000u) return sign | overflow_code;

  // value = significand * 2^(exponent - 23), significand with its implicit bit.
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  std::uint64_t significand = magnitude & 0x7FFFFFu;
  if (exponent == -127) {
    exponent = -126;  // float32 subnormal
  } else {
    significand |= 0x800000u;
  }
  // Result exponent: the target's minimum normal exponent floors it (target subnormals).
  const int min_exponent = 1 - spec.bias;
  const int target_exponent = exponent > min_exponent ? exponent : min_exponent;
  int drop = 23 - spec.mantissa_bits + (target_exponent - exponent);
  if (drop > 40) drop = 40;  // everything rounds to zero past here
  std::uint64_t kept = significand >> drop;
  if (drop > 0) {
    const std::uint64_t remainder = significand & ((std::uint64_t{1} << drop) - 1);
    const std::uint64_t half = std::uint64_t{1} << (drop - 1);
    if (remainder > half || (remainder == half && (kept & 1u))) ++kept;
  }
  // Exponent field and mantissa add up; a mantissa carry moves into the exponent by itself.
  const std::uint64_t code =
      (static_cast<std::uint64_t>(target_exponent - min_exponent) << spec.mantissa_bits) + kept;
  if (code > spec.max_code) return sign | overflow_code;
  return sign | static_cast<std::uint32_t>(code);
}

LOWBIT_HOST_DEVICE float decode_minifloat(std::uint32_t code, MiniFloatSpec spec) {
  const int width = 1 + spec.exponent_bits + spec.mantissa_bits;
  const std::uint32_t sign = (code >> (width - 1)) & 1u;
  const std::uint32_t magnitude = code & ((1u << (width - 1)) - 1);
  const std::uint32_t exponent_field = magnitude >> spec.mantissa_bits;
  const std::uint32_t mantissa = magnitude & ((1u << spec.mantissa_bits) - 1);
  const std::uint32_t sign_f32 = sign << 31;
  const std::uint32_t all_ones = (1u << spec.exponent_bits) - 1;
  if (spec.has_infinity && exponent_field == all_ones) {
    return bits_float(sign_f32 | (mantissa ? 0x7FC00000u : 0x7F800000u));
  }
  if (!spec.has_infinity && magnitude == spec.nan_code && spec.nan_code != spec.max_code) {
    return bits_float(sign_f32 | 0x7FC00000u);
  }
  float result;
  if (exponent_field == 0) {  // subnormal: mantissa * 2^(1 - bias - mantissa_bits), exact in f32
    const int scale_exponent = 1 - spec.bias - spec.mantissa_bits;
    if (scale_exponent + 127 <= 0) {  // bf16 subnormals are float32 subnormals with more bits
      return bits_float(sign_f32 | (mantissa << (23 - spec.mantissa_bits)));
    }
    const float unit = bits_float(static_cast<std::uint32_t>(scale_exponent + 127) << 23);
    result = static_cast<float>(mantissa) * unit;
  } else {
    const std::uint32_t f32_exponent = exponent_field - spec.bias + 127;
    result = bits_float((f32_exponent << 23) | (mantissa << (23 - spec.mantissa_bits)));
  }
  return sign ? -result : result;
}

}  // namespace detail

// ---- fp8 e4m3fn -------------------------------------------------------------------------------
LOWBIT_HOST_DEVICE std::uint8_t float_to_fp8_e4m3(float value,
                                                  Saturation sat = Saturation::kFinite) {
  return static_cast<std::uint8_t>(detail::encode_minifloat(value, detail::e4m3_spec(), sat));
}
LOWBIT_HOST_DEVICE float fp8_e4m3_to_float(std::uint8_t code) {
  return detail::decode_minifloat(code, detail::e4m3_spec());
}

// ---- fp8 e5m2 ---------------------------------------------------------------------------------
LOWBIT_HOST_DEVICE std::uint8_t float_to_fp8_e5m2(float value,
                                                  Saturation sat = Saturation::kFinite) {
  return static_cast<std::uint8_t>(detail::encode_minifloat(value, detail::e5m2_spec(), sat));
}
LOWBIT_HOST_DEVICE float fp8_e5m2_to_float(std::uint8_t code) {
  return detail::decode_minifloat(code, detail::e5m2_spec());
}

// ---- e2m1 (fp4), one code in the low nibble; always saturating (the format has no Inf) -----
LOWBIT_HOST_DEVICE std::uint8_t float_to_e2m1(float value) {
  return static_cast<std::uint8_t>(
      detail::encode_minifloat(value, detail::e2m1_spec(), Saturation::kFinite));
}
LOWBIT_HOST_DEVICE float e2m1_to_float(std::uint8_t code) {
  return detail::decode_minifloat(code & 0xFu, detail::e2m1_spec());
}
// Two e2m1 codes in one byte: element 0 in the low nibble.
LOWBIT_HOST_DEVICE std::uint8_t pack_e2m1x2(std::uint8_t low, std::uint8_t high) {
  return static_cast<std::uint8_t>((low & 0xFu) | ((high & 0xFu) << 4));
}

// ---- bf16 / fp16 ------------------------------------------------------------------------------
// Default kNone: overflow gives Inf, as IEEE and CUDA's __float2bfloat16 / __float2half do.
LOWBIT_HOST_DEVICE std::uint16_t float_to_bf16(float value, Saturation sat = Saturation::kNone) {
  return static_cast<std::uint16_t>(detail::encode_minifloat(value, detail::bf16_spec(), sat));
}
LOWBIT_HOST_DEVICE float bf16_to_float(std::uint16_t code) {
  return bits_float(static_cast<std::uint32_t>(code) << 16);
}
LOWBIT_HOST_DEVICE std::uint16_t float_to_fp16(float value, Saturation sat = Saturation::kNone) {
  return static_cast<std::uint16_t>(detail::encode_minifloat(value, detail::fp16_spec(), sat));
}
LOWBIT_HOST_DEVICE float fp16_to_float(std::uint16_t code) {
  return detail::decode_minifloat(code, detail::fp16_spec());
}

// ---- ue8m0: an unsigned 8-bit exponent, value 2^(code - 127); 0xFF is NaN -------------------
// The sign of the input is ignored (the magnitude is encoded). Zero encodes as 0x00 (2^-127,
// the smallest code). Inf saturates to 0xFE (2^127); NaN gives 0xFF.
LOWBIT_HOST_DEVICE std::uint8_t float_to_ue8m0(float value, ScaleRounding rounding) {
  const std::uint32_t magnitude = float_bits(value) & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return 0xFF;
  if (magnitude == 0x7F800000u) return 0xFE;
  std::uint32_t exponent = magnitude >> 23;
  const std::uint32_t mantissa = magnitude & 0x7FFFFFu;
  if (exponent == 0) {
    // Subnormal float32: 2^-127 is mantissa 0x400000; anything above it rounds up to 2^-126.
    return (rounding == ScaleRounding::kUp && mantissa > 0x400000u) ? 1 : 0;
  }
  if (rounding == ScaleRounding::kUp && mantissa != 0) ++exponent;
  return static_cast<std::uint8_t>(exponent > 0xFE ? 0xFE : exponent);
}
LOWBIT_HOST_DEVICE float ue8m0_to_float(std::uint8_t code) {
  if (code == 0xFF) return bits_float(0x7FC00000u);
  if (code == 0) return bits_float(0x00400000u);  // 2^-127, a float32 subnormal
  return bits_float(static_cast<std::uint32_t>(code) << 23);
}

// Round a positive scale up to a power of two (2^ceil(log2 s)), exactly, in float32.
// Used for UE8M0 scales: the result is representable as ue8m0 for s in [2^-127, 2^127].
LOWBIT_HOST_DEVICE float round_scale_up_to_power_of_two(float scale) {
  return ue8m0_to_float(float_to_ue8m0(scale, ScaleRounding::kUp));
}

// ---- int8: round half to even, saturate to [-128, 127], NaN -> 0 (PTX cvt.rni.sat.s8.f32) -----
LOWBIT_HOST_DEVICE std::int8_t float_to_int8(float value) {
  if (!(value == value)) return 0;
  if (value >= 127.0f) return 127;
  if (value <= -128.0f) return -128;
  // |value| < 2^7 here, so adding and subtracting 1.5 * 2^23 rounds to an integer with RNE.
  const float magic = 12582912.0f;
  const float rounded = (value + magic) - magic;
  return static_cast<std::int8_t>(static_cast<int>(rounded));
}

}  // namespace lowbit

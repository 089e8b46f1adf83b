#include "src/framework/wire_format.h"

#include "src/framework/enforce.h"

namespace fluid {

WireFormat ParseWireFormat(const std::string& name) {
  if (name == "none") return WireFormat::kNative;
  if (name == "bf16") return WireFormat::kBf16;
  if (name == "fp16") return WireFormat::kFp16;
  FLUID_THROW(ErrorCode::kInvalidArgument,
              "gradient compression must be none, bf16 or fp16, got ",
              Quote(name));
}

const char* WireFormatName(WireFormat format) {
  switch (format) {
    case WireFormat::kNative:
      return "none";
    case WireFormat::kBf16:
      return "bf16";
    case WireFormat::kFp16:
      return "fp16";
  }
  return "?";
}

int WireBytes(WireFormat format) {
  return format == WireFormat::kNative ? 4 : 2;
}

void EncodeWire(WireFormat format, const float* in, uint16_t* out,
                int64_t count) {
  FLUID_ENFORCE(format != WireFormat::kNative, "EncodeWire: no 16-bit format");
  if (format == WireFormat::kBf16) {
    for (int64_t i = 0; i < count; ++i) out[i] = FloatToBf16(in[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = FloatToFp16(in[i]);
  }
}

void DecodeWire(WireFormat format, const uint16_t* in, float* out,
                int64_t count) {
  FLUID_ENFORCE(format != WireFormat::kNative, "DecodeWire: no 16-bit format");
  if (format == WireFormat::kBf16) {
    for (int64_t i = 0; i < count; ++i) out[i] = Bf16ToFloat(in[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = Fp16ToFloat(in[i]);
  }
}

}  // namespace fluid

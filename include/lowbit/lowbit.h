// Umbrella header: the whole public C++ API of lowbit.
#pragma once

#include "lowbit/activation.h"
#include "lowbit/block_gemm.h"
#include "lowbit/checkpoint.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/nvfp4.h"
#include "lowbit/quant.h"
#include "lowbit/safetensors.h"
#include "lowbit/scaled_gemm.h"
#include "lowbit/tensor.h"

"""Array plumbing shared by the op wrappers: dtype names, raw-code views for dtypes that DLPack
exporters lack (numpy/ml_dtypes bf16 and fp8, torch fp8), output allocation in the caller's
framework, and the CUDA stream to run on."""

import numpy as np

# lowbit dtype name -> bytes per element
ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8_e4m3fn": 1, "fp8_e5m2": 1,
            "int8": 1, "uint8": 1, "int32": 4}

_NUMPY_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32",
                "float8_e4m3fn": "fp8_e4m3fn", "float8_e5m2": "fp8_e5m2",
                "int8": "int8", "uint8": "uint8", "int32": "int32"}
_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32}

# cudaStreamPerThread: never the legacy default stream when no stream is given.
PER_THREAD_DEFAULT_STREAM = 2


def _is_torch(array):
    return type(array).__module__.split(".")[0] == "torch"


def dtype_name(array):
    """lowbit's name for the dtype of a numpy or torch array (others: from DLPack)."""
    if isinstance(array, np.ndarray):
        return _NUMPY_NAMES.get(array.dtype.name)
    if _is_torch(array):
        return str(array.dtype).replace("torch.", "").replace("bfloat16", "bf16") \
            .replace("float16", "fp16").replace("float32", "fp32") \
            .replace("float8_e4m3fn", "fp8_e4m3fn").replace("float8_e5m2", "fp8_e5m2")
    return None


def as_dlpack(array):
    """(exportable array, explicit dtype name or "") for the extension."""
    name = dtype_name(array)
    if name in ("bf16", "fp8_e4m3fn", "fp8_e5m2"):
        if isinstance(array, np.ndarray):
            return array.view(_RAW[ITEMSIZE[name]]), name
        if _is_torch(array) and name != "bf16":
            import torch
            return array.view(torch.uint8), name
    return array, ""


def empty(like, shape, name):
    """An uninitialized array of lowbit dtype `name` in the framework and device of `like`."""
    if isinstance(like, np.ndarray):
        import ml_dtypes  # numpy has no bf16 / fp8 dtypes of its own
        numpy_dtype = {"bf16": ml_dtypes.bfloat16, "fp8_e4m3fn": ml_dtypes.float8_e4m3fn,
                       "fp8_e5m2": ml_dtypes.float8_e5m2}.get(name, name.replace("fp", "float"))
        return np.empty(shape, dtype=numpy_dtype)
    if _is_torch(like):
        import torch
        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
                       "fp8_e4m3fn": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
                       "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32}[name]
        return torch.empty(shape, dtype=torch_dtype, device=like.device)
    raise TypeError(f"lowbit allocates numpy and torch arrays only; pass the output arrays "
                    f"(out=, scales=...) for {type(like).__name__}")


def stream_for(array, stream):
    """The CUDA stream handle to run on: `stream` if given (an int or an object with .ptr or
    .cuda_stream), else PyTorch's current stream for torch CUDA tensors, else the per-thread
    default stream. Ignored for CPU arrays."""
    if stream is not None:
        for attribute in ("cuda_stream", "ptr"):
            if hasattr(stream, attribute):
                return int(getattr(stream, attribute))
        return int(stream)
    if _is_torch(array) and array.is_cuda:
        import torch
        return torch.cuda.current_stream(array.device).cuda_stream
    return PER_THREAD_DEFAULT_STREAM


def is_cuda(array):
    """Whether the array lives on a CUDA device (DLPack device type 2)."""
    device = getattr(array, "__dlpack_device__", None)
    return device is not None and device()[0] == 2

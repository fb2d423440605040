"""Writer/reader for memfix MFT1 tensor fixtures (read in C by tests/support/mf_test.c).

Format (little-endian): b"MFT1", uint32 dtype (0 f32, 1 bf16 as raw uint16, 2 i32, 3 i64, 4 f64),
uint32 ndim (<= 8), uint32 reserved 0, int64 dims[ndim], then the row-major data.

Usage from fixtures/<op>/gen_<op>.py (no numpy needed; Debian's python3-torch ships without it):
    import sys, pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "support"))
    from mftensor import write_tensor
    write_tensor(path, tensor)     # a torch.Tensor: float32, float64, int32, int64 or bfloat16
"""
import struct

_CODES = {"torch.float32": (0, "f"), "torch.bfloat16": (1, "H"), "torch.int32": (2, "i"),
          "torch.int64": (3, "q"), "torch.float64": (4, "d")}
_FORMATS = {0: "f", 1: "H", 2: "i", 3: "q", 4: "d"}


def write_tensor(path, x):
    import torch

    x = x.detach().cpu().contiguous()
    key = str(x.dtype)
    if key not in _CODES:
        raise TypeError(f"unsupported dtype {x.dtype}")
    code, fmt = _CODES[key]
    if x.dim() > 8:
        raise ValueError("at most 8 dims")
    if x.dtype == torch.bfloat16:
        values = [v & 0xFFFF for v in x.view(torch.int16).reshape(-1).tolist()]
    else:
        values = x.reshape(-1).tolist()
    with open(path, "wb") as f:
        f.write(b"MFT1" + struct.pack("<III", code, x.dim(), 0))
        f.write(struct.pack("<%dq" % x.dim(), *x.shape))
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


def read_tensor(path):
    """Returns (dims, dtype code, flat list of values; bf16 as raw uint16 bits)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:4] != b"MFT1":
        raise ValueError(f"{path}: not an MFT1 file")
    code, ndim, _ = struct.unpack_from("<III", raw, 4)
    dims = struct.unpack_from("<%dq" % ndim, raw, 16)
    n = 1
    for d in dims:
        n *= d
    values = struct.unpack_from("<%d%s" % (n, _FORMATS[code]), raw, 16 + 8 * ndim)
    return dims, code, list(values)

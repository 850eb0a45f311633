"""Byte-deterministic .npz writer.

np.savez stamps every zip member with the current time, so two runs differ.
This writes the same format (one `<key>.npy` member per array, numpy's own
.npy header) with a fixed timestamp and fixed zip attributes.
"""

import io
import zipfile

import numpy as np

_EPOCH = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays, compressed=False):
    """The .npz file for `arrays` (an ordered mapping key -> np.ndarray).

    Member order is the mapping's order. `compressed` selects ZIP_DEFLATED
    (level 6), as np.savez_compressed does; otherwise ZIP_STORED (np.savez).
    """
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", method) as zf:
        for key, value in arrays.items():
            arr = np.asarray(value)
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr, version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=_EPOCH)
            info.compress_type = method
            info.create_system = 3  # unix
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compress_type=method, compresslevel=6 if compressed else None)
    return raw.getvalue()


def read_npz(data):
    """Parse .npz bytes back (round-trip check)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}

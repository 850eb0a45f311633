"""Import onnxruntime's training modules without torch.

`onnxruntime/training/__init__.py` imports torch (for ORTModule).  The pieces
used here (`artifacts`, `api`) do not need it, so a bare package object with
the real `__path__` is put into `sys.modules` before they are imported.
"""

import os
import sys
import types

import onnxruntime

onnxruntime.set_default_logger_severity(3)  # errors only; ORT is chatty at INFO

if "onnxruntime.training" not in sys.modules:
    _pkg = types.ModuleType("onnxruntime.training")
    _pkg.__path__ = [os.path.join(os.path.dirname(onnxruntime.__file__), "training")]
    sys.modules["onnxruntime.training"] = _pkg

from onnxruntime.training import api, artifacts  # noqa: E402

__all__ = ["onnxruntime", "api", "artifacts"]

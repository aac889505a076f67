"""Python bridge to rnnaudit, the audit of trained recurrent models.

rnnaudit (the Go program `audit`) gives every forecast of a recurrent model
exported to ONNX an interval from the blockwise jackknife+. This package
runs it from Python:

    to_long_csv   arrays, tensors or DataFrames of sequences -> the long CSV
                  the audit reads
    export        torch.onnx.export with the axes the audit needs, checked
                  against the module in float64 by the binary
    ridge_from_optimizer
                  the --ridge that matches a PyTorch optimizer's weight decay
    audit         a full audit -> Result (intervals DataFrame, report dict)
    fit, predict  fit once (an .rna artifact), predict for new sequences

Pure Python: numpy is required; pandas (DataFrames) and torch (export,
ridge_from_optimizer) are optional. The binary is found on PATH, in
$RNNAUDIT_BIN or given as binary=; build it with `go install ./cmd/audit`
in a clone of the rnnaudit repository. Failures raise AuditError carrying
the binary's message.
"""

from ._binary import AuditError, BinaryNotFoundError, find_binary
from ._commands import Result, audit, fit, predict, read_intervals
from ._export import ExportError, Exported, export
from ._longcsv import to_long_csv
from ._ridge import ridge_from_optimizer

__version__ = "0.1.0"

__all__ = [
    "AuditError", "BinaryNotFoundError", "ExportError", "Exported", "Result",
    "audit", "export", "find_binary", "fit", "predict", "read_intervals",
    "ridge_from_optimizer", "to_long_csv",
]

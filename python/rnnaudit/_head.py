"""What kind of head an exported model ends in, and the --loss the audit
needs for it: a final Sigmoid is a probability (--loss bce), a head trained
with nn.BCEWithLogitsLoss outputs a logit (--loss bce-logits), K logits
trained with nn.CrossEntropyLoss are a K-class classifier (--loss
softmax-ce). See docs/classification.md."""

import json
import warnings

from . import _onnxwire

# Operators that only move, select or reshape values: the head is the
# first operator before them.
_SHAPE_OPS = {"Identity", "Squeeze", "Unsqueeze", "Reshape", "Flatten", "Gather", "Slice", "Transpose", "Cast",
              "Expand"}
_HEADS = {"Sigmoid": "sigmoid", "Softmax": "softmax", "LogSoftmax": "log-softmax"}


def head_of(data, output_name):
    """The head of the graph of the ONNX bytes data at its output
    output_name: "sigmoid", "softmax" or "log-softmax" when that operator
    computes the output (through operators that only reshape or select),
    else "linear"."""
    nodes, _ = _onnxwire.nodes(data)
    producer = {o: (op, ins) for op, ins, outs in nodes for o in outs}
    name = output_name
    for _ in range(len(nodes) + 1):
        if name not in producer:
            return "linear"
        op, ins = producer[name]
        if op in _HEADS:
            return _HEADS[op]
        if op not in _SHAPE_OPS or not ins:
            return "linear"
        name = ins[0]
    return "linear"


def _criterion_name(criterion):
    if criterion is None:
        return None
    if isinstance(criterion, str):
        return criterion
    if isinstance(criterion, type):
        return criterion.__name__
    return type(criterion).__name__


def _values(t):
    """A tensor, array or sequence of numbers as a list of floats."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().reshape(-1).tolist()
    elif hasattr(t, "tolist"):
        t = t.tolist()
    if isinstance(t, (int, float)):
        return [float(t)]
    return [float(v) for v in t]


def _weights(vals):
    return ",".join("%.17g" % v for v in vals)


def loss_for(head, classes, criterion):
    """(loss, flags, note): the audit's --loss for an export whose head is
    head (head_of) with classes values on the output's last axis (1 when
    none), trained with criterion (a PyTorch loss module, its class, its
    class name, or None when not given); flags are the keyword flags of
    rnnaudit.audit that state the loss (loss, and class_weights from
    pos_weight or weight), and note says why the loss is None or what to
    watch. loss is None when the export alone cannot tell (a linear head
    without a criterion is regression or a logit)."""
    name = _criterion_name(criterion)
    flags, note = {}, ""
    if name == "MSELoss":
        loss = "squared-error"
    elif name == "BCELoss":
        loss = "bce"
        if head != "sigmoid":
            note = ("trained with BCELoss, whose input is a probability, but the export does not end in a "
                    "Sigmoid: check that its output is the probability of class 1")
        if getattr(criterion, "weight", None) is not None:
            note = ("BCELoss(weight=...) weighs elements, not classes: the audit cannot take it; give "
                    "class_weights when the weights depend on the label only")
    elif name == "BCEWithLogitsLoss":
        loss = "bce" if head == "sigmoid" else "bce-logits"
        if head == "sigmoid":
            note = ("trained with BCEWithLogitsLoss but exported with a final Sigmoid: the output is the "
                    "probability, whose --loss bce is BCEWithLogitsLoss on the logit")
        pw = getattr(criterion, "pos_weight", None)
        if pw is not None:
            vals = _values(pw)
            if len(vals) != 1:
                note = "pos_weight of %d values: the audit takes one (a single output)" % len(vals)
            else:
                flags["class_weights"] = _weights([1.0, vals[0]])
        if getattr(criterion, "weight", None) is not None:
            note = "BCEWithLogitsLoss(weight=...) weighs elements, not classes: the audit cannot take it"
    elif name in ("CrossEntropyLoss", "NLLLoss"):
        loss = "softmax-ce"
        if name == "NLLLoss" and head != "log-softmax":
            note = ("trained with NLLLoss, whose input is log-probabilities, but the export does not end in "
                    "a LogSoftmax: check the head")
        if head == "softmax":
            loss = None
            note = ("the export ends in a Softmax: --loss softmax-ce takes the K logits (or log-probabilities); "
                    "export the module without its final softmax")
        if head == "sigmoid":
            loss = None
            note = "trained with %s but the export ends in a Sigmoid: check the head" % name
        if loss and classes < 2:
            loss = None
            note = "trained with %s but the output has one value per forecast, not K logits" % name
        w = getattr(criterion, "weight", None)
        if loss and w is not None:
            flags["class_weights"] = _weights(_values(w))
        ls = float(getattr(criterion, "label_smoothing", 0.0) or 0.0)
        if loss and ls > 0:
            flags["label_smoothing"] = "%.17g" % ls
    elif name is not None:
        loss = None
        note = "%s: not a loss the audit knows (MSELoss, BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, NLLLoss)" % name
    elif head == "sigmoid":
        loss = "bce"
        note = "" if classes == 1 else "a Sigmoid on %d values: the audit takes one probability per forecast" % classes
    elif head in ("softmax", "log-softmax"):
        loss = "softmax-ce" if head == "log-softmax" else None
        if head == "softmax":
            note = ("the export ends in a Softmax: --loss softmax-ce takes the K logits; export the module without "
                    "its final softmax")
    else:
        loss = None
        note = ("a linear head: squared-error for a regression model; for a classifier pass the training "
                "criterion (loss=nn.BCEWithLogitsLoss() for a logit: --loss bce-logits; "
                "loss=nn.CrossEntropyLoss() for K logits: --loss softmax-ce)")
    if loss and loss != "squared-error":
        flags["loss"] = loss
    elif loss:
        flags = {}
    return loss, flags, note


def record(path, loss, flags):
    """Appends the loss and its flags to the ONNX file's metadata
    (metadata_props "rnnaudit.loss", a JSON object such as {"loss":
    "bce-logits", "class_weights": "1,3"}), for the record: the audit is
    still told --loss."""
    _onnxwire.append_metadata(path, _onnxwire.LOSS_KEY, json.dumps(dict(flags, loss=loss), sort_keys=True))


def warn(path, note):
    if note:
        warnings.warn("rnnaudit.export: %s: %s" % (path, note), RuntimeWarning, stacklevel=4)

"""ridge_from_optimizer: the audit's --ridge from a PyTorch optimizer's
weight decay."""

import math

import numpy as np

__all__ = ["ridge_from_optimizer"]


def ridge_from_optimizer(optimizer, n_terms, target_scale=1.0, per_parameter=False):
    """Returns the --ridge R that matches optimizer's weight decay.

    The audit's objective is the SUM of squared errors over the training
    data's N loss terms plus (R/2)|theta|^2 (docs/design.md, section 2.3; `--ridge`).
    Training with the MEAN over those terms (nn.MSELoss(), mini-batches or
    not) and weight_decay w:

    - coupled decay (SGD, Adam, RMSprop... with weight_decay=w: w*theta is
      added to the gradient, an L2 penalty (w/2)|theta|^2 on the mean loss):
      R = w * N;
    - decoupled decay (AdamW): each step shrinks theta by lr*w outside the
      adaptive scaling, so a fixed point has grad_i(mean loss) =
      -w * (sqrt(v_i) + eps) * theta_i, with v the optimizer's
      bias-corrected second-moment estimate: an L2 penalty whose strength
      differs per parameter, w * (sqrt(v_i) + eps). No single ridge is
      exact; this returns R = w * N * median over parameters of
      (sqrt(v_i) + eps), read from the optimizer's state (so call it after
      training). Compare it with diagnostics.fit.fitted_ridge in the report.

    n_terms is N: the number of squared errors the mean runs over, counted
    over the whole training set (sequences x steps x horizons with a
    target; with padding included in the mean, count the padded terms too).
    target_scale: when the loss was computed on targets divided by s
    (standardised) but the exported model outputs the original units (the
    scaling in the graph) and the CSV holds original targets, the summed
    loss in those units is s^2 times larger and so is R: pass s. Parameter
    groups with different weight decays give the median over all
    parameters of their per-parameter strengths; groups with
    weight_decay 0 count as 0. per_parameter=True returns the strength of
    every parameter value instead (a numpy array, the param_groups' order).
    """
    strengths = []
    decoupled_types = {"AdamW"}
    for group in optimizer.param_groups:
        w = float(group.get("weight_decay", 0.0) or 0.0)
        decoupled = type(optimizer).__name__ in decoupled_types or bool(group.get("decoupled_weight_decay"))
        for p in group["params"]:
            n = p.numel()
            if w == 0.0:
                strengths.append(np.zeros(n))
                continue
            if not decoupled:
                strengths.append(np.full(n, w))
                continue
            state = optimizer.state.get(p, {})
            if "exp_avg_sq" not in state:
                raise ValueError("ridge_from_optimizer: %s has no state for a parameter of %d values: "
                                 "decoupled weight decay needs the second moments, so call it after "
                                 "training" % (type(optimizer).__name__, n))
            beta2 = group["betas"][1]
            step = state["step"]
            step = float(step.item() if hasattr(step, "item") else step)
            v = state["max_exp_avg_sq"] if group.get("amsgrad") else state["exp_avg_sq"]
            v = v.detach().double().cpu().numpy().reshape(-1) / (1 - beta2 ** step)
            strengths.append(w * (np.sqrt(v) + group["eps"]))
    if not strengths:
        raise ValueError("ridge_from_optimizer: the optimizer has no parameters")
    scale = float(n_terms) * float(target_scale) ** 2
    if per_parameter:
        return np.concatenate(strengths) * scale
    r = float(np.median(np.concatenate(strengths))) * scale
    if not math.isfinite(r):
        raise ValueError("ridge_from_optimizer: the ridge is not finite (%r)" % r)
    return r

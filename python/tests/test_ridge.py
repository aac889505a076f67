import unittest

import numpy as np

from _util import HAVE_TORCH, needs_torch, rnnaudit

if HAVE_TORCH:
    import torch
    import torch.nn as nn


def data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = X @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.5 * rng.standard_normal(n)
    return X, y


def closed_form(X, y, R, s=1.0):
    """argmin of sum (y - s (X a + b))^2 + (R/2)(|a|^2 + b^2): the audit's
    objective (summed squared error plus the ridge) for a linear model
    whose output is scaled by s; theta = (a, b)."""
    Xt = np.hstack([X, np.ones((len(X), 1))])
    return np.linalg.solve(2 * s * s * Xt.T @ Xt + R * np.eye(4), 2 * s * Xt.T @ y)


@needs_torch
class Ridge(unittest.TestCase):
    def train(self, opt_class, target_scale=1.0, steps=3000, **kw):
        """Full-batch training of a linear model on the MEAN squared error
        of y / target_scale, to its fixed point."""
        torch.manual_seed(0)
        X, y = data()
        model = nn.Linear(3, 1).double()
        opt = opt_class(model.parameters(), lr=0.05, **kw)
        Xt, zt = torch.from_numpy(X), torch.from_numpy(y / target_scale)
        for i in range(steps):
            if i == steps // 2:
                for g in opt.param_groups:
                    g["lr"] = 0.002
            opt.zero_grad()
            loss = ((model(Xt)[:, 0] - zt) ** 2).mean()
            loss.backward()
            opt.step()
        theta = np.concatenate([model.weight.detach().numpy().ravel(), model.bias.detach().numpy()])
        return opt, theta, X, y

    def test_coupled_weight_decay(self):
        # Adam with weight_decay w on the mean over N terms is the audit's
        # objective with R = w N: its minimiser is what Adam converged to.
        opt, theta, X, y = self.train(torch.optim.Adam, weight_decay=0.05)
        R = rnnaudit.ridge_from_optimizer(opt, n_terms=len(y))
        self.assertAlmostEqual(R, 0.05 * 200, places=12)
        np.testing.assert_allclose(theta, closed_form(X, y, R), atol=1e-5)
        # The naive reading (weight_decay as --ridge) is far from it.
        self.assertGreater(np.abs(theta - closed_form(X, y, 0.05)).max(), 1e-2)

    def test_target_scale(self):
        # Trained on y / s, audited in the units of y: R = w N s^2.
        s = 4.0
        opt, theta, X, y = self.train(torch.optim.SGD, target_scale=s, weight_decay=0.05)
        R = rnnaudit.ridge_from_optimizer(opt, n_terms=len(y), target_scale=s)
        self.assertAlmostEqual(R, 0.05 * 200 * 16, places=9)
        np.testing.assert_allclose(theta, closed_form(X, y, R, s), atol=1e-6)

    def test_decoupled_weight_decay(self):
        # AdamW's fixed point: grad_i(sum) = -N w (sqrt(v_i) + eps) theta_i,
        # one ridge strength per parameter: checked on the trained model's
        # gradient. The scalar (their median) is about w N eps here, where
        # eps dominates sqrt(v); the minimiser of the audit's objective with
        # it is close to the trained parameters, and w N is far off.
        opt, theta, X, y = self.train(torch.optim.AdamW, weight_decay=0.05, eps=0.5, betas=(0.9, 0.99))
        Xt = np.hstack([X, np.ones((len(X), 1))])
        grad_sum = -2 * Xt.T @ (y - Xt @ theta)
        Ri = rnnaudit.ridge_from_optimizer(opt, n_terms=len(y), per_parameter=True)
        self.assertEqual(Ri.shape, (4,))
        np.testing.assert_allclose(grad_sum + Ri * theta, 0, atol=1e-6 * np.abs(grad_sum).max())
        self.assertGreater(np.abs(grad_sum + 0.05 * 200 * theta).max(), 0.5 * np.abs(grad_sum).max())
        R = rnnaudit.ridge_from_optimizer(opt, n_terms=len(y))
        self.assertAlmostEqual(R, float(np.median(Ri)), places=12)
        near = np.abs(theta - closed_form(X, y, R)).max()
        far = np.abs(theta - closed_form(X, y, 0.05 * 200)).max()
        self.assertLess(near, far / 5, "median ridge %g: %g from the trained parameters; w N: %g" % (R, near, far))

    def test_needs_state_for_adamw(self):
        opt = torch.optim.AdamW(nn.Linear(2, 1).parameters(), weight_decay=0.01)
        with self.assertRaisesRegex(ValueError, "call it after training"):
            rnnaudit.ridge_from_optimizer(opt, 100)

    def test_no_decay(self):
        opt = torch.optim.Adam(nn.Linear(2, 1).parameters())
        self.assertEqual(rnnaudit.ridge_from_optimizer(opt, 100), 0.0)


if __name__ == "__main__":
    unittest.main()

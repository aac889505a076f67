# EuStockMarkets (R datasets): next-week log volatility from daily returns, GRU, Adam + weight decay.
import numpy as np, pandas as pd, torch, torch.nn as nn
torch.manual_seed(0); np.random.seed(0)
import sys, os
out = sys.argv[1]
d = pd.read_csv(os.path.join(out, "eu.csv")); names = list(d.columns)
r = np.diff(np.log(d.values), axis=0) * 100  # daily % returns, [T,4]
T = r.shape[0]; H = 5
# target at row t: log of RMS of returns t+1..t+5
y = np.array([[np.log(np.sqrt(np.mean(r[t+1:t+1+H, j]**2)) + 1e-3) for j in range(4)] for t in range(T-H)])
x = np.abs(r[:T-H]); x = np.log(x + 0.05)
mx, sx = x.mean(), x.std(); my, sy = y.mean(), y.std()
x = (x - mx) / sx; y = (y - my) / sy
n = x.shape[0]; cut = int(n * 0.8)
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.g = nn.GRU(1, 8, batch_first=True); s.l = nn.Linear(8, 1)
    def forward(s, x):
        o, _ = s.g(x); return s.l(o)
m = M()
xt = torch.tensor(x[:cut].T[:, :, None], dtype=torch.float32); yt = torch.tensor(y[:cut].T[:, :, None], dtype=torch.float32)
opt = torch.optim.Adam(m.parameters(), lr=1e-2, weight_decay=1e-4)
for it in range(400):
    opt.zero_grad(); loss = ((m(xt) - yt)**2).mean(); loss.backward(); opt.step()
print("train mse", loss.item())
torch.onnx.export(m, xt[:1, :10], os.path.join(out, "eu.onnx"), input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b", 1: "t"}, "y": {0: "b", 1: "t"}}, opset_version=13)
def write(fn, a, b, ids, t0):
    rows = []
    for j in ids:
        for t in range(a.shape[0]):
            rows.append((names[j], t0 + t + 1, a[t, j], b[t, j]))
    pd.DataFrame(rows, columns=["id", "t", "x", "y"]).to_csv(os.path.join(out, fn), index=False, float_format="%.10g")
write("train.csv", x[:cut], y[:cut], range(4), 0)
write("test.csv", x[cut:], y[cut:], range(4), cut)
write("train_dax.csv", x[:cut], y[:cut], [0], 0)
write("test_dax.csv", x[cut:], y[cut:], [0], cut)
print("rows", cut, n - cut)

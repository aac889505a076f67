"""Makes first_forecast.csv for audit/windows_test.go: the forecast of the
first value after the training series (row 110, step 111) by the window
of the last 6 training rows (steps 105-110), and of the first value after
a calibration stretch of rows 110-129 (row 130, step 131) by the window
of its last 6 rows, each computed by hand in numpy from model.onnx's
weights (the RNN's tanh recursion and the linear head, float64) on the
series joined from train.csv and test.csv: a reference independent of
rnnaudit's evaluator and of PyTorch.

Run with /usr/bin/python3 (onnx, numpy): python3 make_first.py
"""
import csv

import numpy as np
import onnx
from onnx import numpy_helper

W = 6


def main():
    w = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in onnx.load("model.onnx").graph.initializer}
    wi, wh, b = w["onnx::RNN_40"][0], w["onnx::RNN_41"][0], w["onnx::RNN_42"][0]
    rows = [r for f in ("train.csv", "test.csv") for r in csv.DictReader(open(f))]
    y = np.array([float(r["y"]) for r in sorted(rows, key=lambda r: int(r["t"]))])

    def forecast(last):
        h = np.zeros(wh.shape[0])
        for x in y[last - W + 1:last + 1]:
            h = np.tanh(wi @ [x] + b[:4] + wh @ h + b[4:])
        return (w["head.weight"] @ h + w["head.bias"])[0]

    with open("first_forecast.csv", "w") as out:
        out.write("step,forecast,target\n")
        for last in (109, 129):  # the window's last row; it forecasts row last+1
            out.write(f"{last + 1},{forecast(last):.12g},{y[last + 1]:.6f}\n")


if __name__ == "__main__":
    main()

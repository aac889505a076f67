package datacheck

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tensor is one parameter tensor of the flat parameter vector: its name
// and its place.
type Tensor struct {
	Name         string
	Offset, Size int
}

// Untrained is a parameter tensor that does not look trained: at the
// trained point the gradient of the training objective (with the ridge)
// is near zero for every tensor that was trained, whatever its scale;
// a tensor exported beside the weights but never trained (a scaler's
// statistics, a mask, a position table) generally has a gradient far
// from zero, most of all the ridge's pull R theta on values that never
// felt it. RMS is the tensor's gradient per value (|g_t| / sqrt(n_t)),
// Median the median of that over every tensor.
type Untrained struct {
	Name   string
	RMS    float64
	Median float64
}

// UntrainedTensors returns the tensors of ts whose gradient per value in
// grad (the total gradient of the training objective, with the ridge)
// is more than ratio times the median over the tensors and whose
// gradient alone is larger than that of all the tensors not returned
// together: tensors that carry the leftover gradient of the fit, rather
// than a share of the noise every mini-batch optimiser leaves. With
// fewer than three tensors, or a zero median, it returns none.
func UntrainedTensors(ts []Tensor, grad []float64, ratio float64) []Untrained {
	if len(ts) < 3 {
		return nil
	}
	rms := make([]float64, len(ts))
	sq := make([]float64, len(ts))
	for i, t := range ts {
		for _, g := range grad[t.Offset : t.Offset+t.Size] {
			sq[i] += g * g
		}
		rms[i] = math.Sqrt(sq[i] / float64(max(t.Size, 1)))
	}
	sorted := slices.Clone(rms)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if !(med > 0) {
		return nil
	}
	var rest float64
	flagged := make([]bool, len(ts))
	for i := range ts {
		if flagged[i] = rms[i] > ratio*med; !flagged[i] {
			rest += sq[i]
		}
	}
	var out []Untrained
	for i, t := range ts {
		if flagged[i] && sq[i] > rest {
			out = append(out, Untrained{Name: t.Name, RMS: rms[i], Median: med})
		}
	}
	return out
}

// ExcludeFlag is the --params flag that leaves the tensors us out of the
// audit, such as --params '!mean,!std'.
func ExcludeFlag(us []Untrained) string {
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = "!" + u.Name
	}
	return fmt.Sprintf("--params '%s'", strings.Join(names, ","))
}

// FitRidge sets FittedRidge and FittedGradNorm from total, the
// gradient at theta of the training objective with the given ridge:
// grad L_data = total - ridge theta, and |grad L_data + R' theta| is least
// at R' = -(grad L_data . theta) / |theta|^2, clamped at 0.
func (f *FitCheck) FitRidge(theta, total []float64, ridge float64) {
	var gt, tt float64
	for i, th := range theta {
		g := total[i] - ridge*th
		gt += g * th
		tt += th * th
	}
	if !(tt > 0) {
		return
	}
	f.FittedRidge = math.Max(0, -gt/tt)
	var ss float64
	for i, th := range theta {
		g := total[i] - ridge*th + f.FittedRidge*th
		ss += g * g
	}
	f.FittedGradNorm = math.Sqrt(ss)
}

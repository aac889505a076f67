package audit

// This file is the audit's policy: every threshold of its judgement,
// once, with what it rests on. A threshold here is a figure against which
// a measured figure decides the verdict's level (Judge), raises a
// warning, makes a kind of interval count as holding (hold), advises a
// block scheme (datacheck.SchemeAdvice), or sends the audit down another path
// (Auto's solver, the LowRank solver's shortcuts). The numerical settings
// of the solvers (tolerances, iteration caps, memory bounds) stay with
// their code: they decide how a figure is computed, not what it means.
// The statistical rules of the interval arithmetic (CoverageTolerance,
// the long-series rules) stay with that arithmetic.

// Thresholds that the reports quote beside the figures they judge.
const (
	// StationarityBound is the ratio of the total training gradient to
	// the median block gradient (Diagnostics.Stationarity) above which the
	// model is said not to be at a stationary point of its training loss
	// (Warning NotStationary): below it the leftover gradient is a fifth
	// of one block's, which the leave-one-out steps can ignore. The ratio
	// alone does not tell a mistake from an ordinary model:
	// benchmarks/trust measured 47 to 111 on correctly audited mini-batch
	// Adam GRUs, 104 to 194 with swapped features or a forgotten shift;
	// the column check (datacheck.FitCheck) does.
	StationarityBound = 0.2

	// DampingShare is the share by which the mean width may move when
	// the damping is multiplied or divided by SensitivityFactor before
	// the verdict says the intervals depend on the damping (reason
	// DampingSensitive): benchmarks/trust measured up to 21% (at rho /
	// 10) on ordinarily trained GRUs at the default damping, and 78% on
	// one given swapped features.
	DampingShare = 0.25

	// SensitivityFactor is the factor the damping is multiplied and
	// divided by for DampingSensitivity: one order of magnitude each way.
	// The default damping (hvp.DefaultDampingFor) itself spans a decade,
	// from 1e-4 of the mean eigenvalue at a stationary point to 1e-3 at
	// stationarity ratio 1, and the data pin it down no more finely, so
	// intervals to be trusted should not hang on where within a decade
	// the damping falls; DampingShare is the move allowed across it.
	SensitivityFactor = 10

	// HighLeverageBound is the mean own leverage above which a step's
	// intervals, built from models started at the trained one, are
	// expected to under-cover (Warning HighLeverage; measured on the
	// synthetic study with 100 sequences: the steps below the 1 - 2 alpha
	// guarantee are those above about 0.2).
	HighLeverageBound = 0.2

	// WideBound is how many times wider than a reference (the in-sample
	// residual intervals, or split conformal on a calibration set) the
	// jackknife+ intervals may be before the audit warns that they are too
	// wide to be informative (Warnings TooWide, WiderThanCalibrated). On
	// the influence benchmark's models the defaults stay within 1.5 times
	// the test-set oracle width while the in-sample intervals are 0.9-1.0
	// times it; the blow-ups this catches were 2 to 270 times.
	WideBound = 2.0

	// OverfitRatio is the ratio of the model's test RMSE to its training
	// RMSE at a step (Warning StepCoverage's Ratio) from which, when it is
	// reached at every step whose coverage falls short, the model is said
	// to fit training noise there: the leave-one-block-out models start
	// from the trained model and keep part of that fit. The margin of 20%
	// leaves out the ordinary gap between a model's test and training
	// errors.
	OverfitRatio = 1.2

	// RefineLeverage is the largest leverage eigenvalue of a block's
	// low-rank leverage matrix above which the LowRank solver re-solves
	// the block's Newton step by conjugate gradients. Measured on rnn100s
	// of benchmarks/influence (rank 120 of 481): refining the blocks above
	// 0.5 (92 of 100) leaves the limits within 0.8% (mean) of the interval
	// width of the exact solver's; above 0.9 (48) 1.6%, only the unbounded
	// ones (31) 6.2%.
	RefineLeverage = 0.5

	// AutoExactMax is the largest parameter count for which Auto chooses
	// the exact (dense curvature and inverse) solver: it forms P
	// curvature columns, a P×P matrix (72 MB at 3000) and its O(P³)
	// eigendecomposition and inverse, while the LowRank solver costs about
	// 400 curvature products whatever P, so above a few thousand
	// parameters the dense solver is the slower and the larger.
	AutoExactMax = 3000

	// DependenceLevel is the autocorrelation, under an AR(1)-like decay,
	// that an advised block length should reach down to (datacheck.SchemeAdvice:
	// the K with |rho|^K at most DependenceLevel): the conventional 5% of
	// a significance level, beyond which a block's values are nearly
	// independent of the data outside it, as leave-one-block-out needs,
	// without blocks longer than the dependence asks.
	DependenceLevel = 0.05
)

// Thresholds that only the audit reads; the figures it judges carry them
// (Reason.Bound, Warning.Bound).
const (
	// unboundedPoor and unboundedFair are the shares of unbounded
	// intervals above which the verdict is poor, or at most fair (reasons
	// ManyUnbounded, SomeUnbounded): an unbounded interval covers by
	// construction, so coverage alone would call a run whose intervals
	// are all infinite good (the Newton estimator with the Hessian on the
	// packed LSTM of benchmarks/influence had 6,558 of 10,000 infinite,
	// covered 100% and was called good).
	unboundedPoor = 0.5
	unboundedFair = 0.05

	// mappingGain: another column mapping whose training RMSE is below
	// mappingGain times the given mapping's means the given one is wrong
	// (reason WrongColumns). In benchmarks/trust the right mapping fits
	// 2.3 to 12.8 times better than the wrong ones (swapped features, a
	// forgotten or extra shift), on three GRUs: a wrong mapping's best
	// alternative is at 0.08 to 0.42 of its RMSE, a right one's never
	// below 2.3 times it.
	mappingGain = 0.8

	// ridgeGain: when the ridge that best explains the training gradient
	// leaves a gradient below ridgeGain times the one with the given
	// ridge, the given ridge does not match the training (reason
	// RidgeMismatch, with ridgeApart). This can only work for a model
	// trained to a stationary point of its penalised loss: on a
	// mini-batch model the optimiser's leftover gradient dwarfs R theta
	// (benchmarks/trust: the best-fitting ridge removes at most 3% of the
	// gradient, even against a ridge 100 times too large), so there the
	// check stays silent and the damping sensitivity is what shows the
	// ridge's effect.
	ridgeGain = 0.5

	// untrainedRatio: a parameter tensor whose gradient per value (with
	// the ridge) is more than this many times the median tensor's, and
	// carries more gradient than the other tensors together, does not
	// look trained (datacheck.UntrainedTensors). On a GRU trained with
	// Adam and weight decay (onnx/testdata/params) the trained tensors
	// spread to 4.6 times their median; its input statistics, taken as
	// parameters, stand at 70 and 300 times it (the ridge's pull on
	// values that never felt it).
	untrainedRatio = 20

	// ridgeApart is the factor by which the best-fitting ridge must
	// differ from the given one, either way, for a ridge mismatch: the
	// check looks for a penalty of another order, such as PyTorch's
	// weight decay w given without the factor N of a loss averaged over N
	// terms (--ridge w·N), not for a ridge within a factor of 2.
	ridgeApart = 2

	// leverageLimit is how close to 1 a block's largest leverage
	// eigenvalue may come before its own leave-out residuals are declared
	// unbounded (Warning UnboundedBlocks): (I - S)^-1 would multiply them
	// by more than 1/leverageLimit = 1000, which says that the model
	// (almost) interpolates the block and that the linearised leave-out
	// fit cannot be trusted there.
	leverageLimit = 1e-3

	// lowLeverage is the LowRank solver's probes' mean own leverage below
	// which its block pass skips the per-block Jacobian rows: the steps
	// are the infinitesimal ones, A g_b, and the own residuals the
	// in-sample ones |y - f(x; theta_hat)|, which the leave-out ones
	// exceed by a factor of about 1/(1 - leverage), within 1%.
	lowLeverage = 0.01

	// minAgreement is the mean parameter cosine between the influence
	// steps and exact re-training below which they are said to agree
	// poorly (Warning PoorAgreement). On examples/chickweight with
	// interval blocks, every block re-fitted exactly, the iterated Newton
	// step (the default there) has cosine 0.998 to 0.999 with the exact
	// re-fits and a single step, which it replaces for falling short,
	// 0.66 to 0.88; 0.9, an angle of about 26 degrees, separates the two.
	minAgreement = 0.9

	// stepZ is how many standard errors a step's coverage may fall below
	// the target before a kind counts as failing there (hold): 3, since
	// every step of every kind is tested (two, CoverageTolerance, for
	// pooled coverage).
	stepZ = 3

	// stepFloor is the least tolerance, in coverage, that hold allows a
	// step: one point, so that a step with very many values, whose
	// standard error is tiny, is not failed for a shortfall of less than
	// a point.
	stepFloor = 0.01

	// minStepValues is the fewest labelled values at a step for its
	// coverage to be judged (hold, the StepsNearBound reason): below 20
	// one miss moves it by 5 points.
	minStepValues = 20

	// minCorrelation is the smallest |lag-1 autocorrelation| of the
	// training residuals that counts as serial correlation however many
	// pairs there are (datacheck.SchemeAdvice.Correlated): below it an interval
	// leaves out data whose errors are at most weakly tied to their
	// neighbours'.
	minCorrelation = 0.1
)

module github.com/rnnaudit/rnnaudit

go 1.26.8

require (
	github.com/owulveryck/onnx-go v0.5.0
	github.com/spf13/pflag v1.0.5
	golang.org/x/sys v0.30.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/chewxy/hm v1.0.0 // indirect
	github.com/chewxy/math32 v1.0.4 // indirect
	github.com/gogo/protobuf v1.3.0 // indirect
	github.com/golang/protobuf v1.3.2 // indirect
	github.com/google/flatbuffers v1.11.0 // indirect
	github.com/pkg/errors v0.8.1 // indirect
	github.com/xtgo/set v1.0.0 // indirect
	golang.org/x/tools v0.30.0 // indirect
	gorgonia.org/tensor v0.9.3 // indirect
	gorgonia.org/vecf32 v0.9.0 // indirect
	gorgonia.org/vecf64 v0.9.0 // indirect
)

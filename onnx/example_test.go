package onnx_test

import (
	"fmt"
	"log"

	"github.com/rnnaudit/rnnaudit/onnx"
)

func ExampleLoad() {
	g, err := onnx.Load("testdata/pytorch/lstm_1l_bf.onnx")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("opset", g.Opset)
	for _, in := range g.Inputs {
		fmt.Println("input", in.Name, in.Elem, in.ShapeString())
	}
	fmt.Println("parameters", g.NumParams())
	layout, reason := onnx.DetectLayout(g)
	fmt.Printf("%v (%s)\n", layout, reason)
	// Output:
	// opset 14
	// input x float [batch time 3]
	// parameters 149
	// batch-first (dimension names [batch time 3])
}

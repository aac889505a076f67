package onnx

import (
	"bytes"
	"fmt"
)

// exportRecipe is how to make an ONNX model from a PyTorch one.
const exportRecipe = `export it to ONNX first: model.eval(); torch.onnx.export(model, (torch.zeros(1, 10, n_features),), "model.onnx", input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "time"}, "y": {0: "batch", 1: "time"}}) (docs/export.md in the rnnaudit repository)`

// foreignFormat recognises the files people pass for an ONNX model by
// mistake from their first bytes, and says what they are and how to export
// the model: a PyTorch checkpoint (torch.save: a zip archive, or a pickle
// in the legacy format), a TorchScript archive (torch.jit.save: a zip) and
// a Keras HDF5 file. It returns nil for anything else.
func foreignFormat(data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return fmt.Errorf("%w: the file is a zip archive, as PyTorch writes a .pt/.pth checkpoint (torch.save) or a TorchScript model (torch.jit.save), not an ONNX model; load the model in PyTorch and %s", ErrInvalid, exportRecipe)
	case len(data) >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5:
		return fmt.Errorf("%w: the file is a Python pickle, as PyTorch writes a .pt/.pth checkpoint in its legacy format (torch.save), not an ONNX model; load the model in PyTorch and %s", ErrInvalid, exportRecipe)
	case bytes.HasPrefix(data, []byte("\x89HDF\r\n\x1a\n")):
		return fmt.Errorf("%w: the file is an HDF5 file, as Keras writes a .h5 model, not an ONNX model; convert it with tf2onnx: python -m tf2onnx.convert --keras model.h5 --opset 17 --output model.onnx (docs/export.md in the rnnaudit repository)", ErrInvalid)
	}
	return nil
}

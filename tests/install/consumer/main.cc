// app MODEL.onnx INPUT.npy: runs the model's first input on INPUT.npy on the CPU and
// prints each output's name and shape. Uses only the installed public API.
#include <ember/ember.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx INPUT.npy\n";
    return 2;
  }
  try {
    ember::Session session(argv[1]);
    const ember::Tensor input = ember::read_npy(argv[2]);
    const std::vector<ember::Tensor> outputs = session.run({{session.inputs()[0].name, input}});
    for (size_t i = 0; i < outputs.size(); ++i)
      std::cout << session.outputs()[i].name << " " << ember::shape_to_string(outputs[i].shape()) << "\n";
  } catch (const ember::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

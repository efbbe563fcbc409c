"""Writes the ONNX backend *node* test cases (model.onnx, test_data_set_N/*.pb) to DIR/node.

The pip onnx package ships the case definitions (onnx/backend/test/case/node/*.py) but not
their data, and its `cmd_tools generate-data` writes only the model cases. This reuses
that tool's writer with the node cases as its source, so the files are the ones
onnx's own generator would write.
"""

import argparse
import types
import warnings

import onnx.backend.test.case.node as node_cases
import onnx.backend.test.cmd_tools as cmd_tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", help="directory to write node/<case>/ into")
    args = parser.parse_args()
    # Some cases compute their expected outputs with deliberate divisions by zero.
    warnings.simplefilter("ignore", RuntimeWarning)
    cmd_tools.model_test = types.SimpleNamespace(collect_testcases=node_cases.collect_testcases)
    cmd_tools.generate_data(argparse.Namespace(output=args.output))


if __name__ == "__main__":
    main()

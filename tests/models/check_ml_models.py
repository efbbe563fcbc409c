#!/usr/bin/env python3
"""Classic-ML models: scikit-learn estimators exported by skl2onnx (ai.onnx.ml ops), run
by ember's `infer` and by ONNX Runtime, outputs compared.

    check_ml_models.py --infer PATH_TO_INFER --work DIR [--models rf_regressor,...]

Each estimator is fitted on fixed-seed random data (seconds), exported without ZipMap
(probabilities stay a tensor) and checked on 257 fresh rows with check_models.py's metric
and a tolerance of 1e-4; int64 labels must be equal. More take what skl2onnx makes
of real pipelines: classifiers with their default ZipMap output (a list of maps, which
infer writes as JSON; values within 1e-4), on int64 and on string labels, a ColumnTransformer with a string column
(OneHotEncoder) beside scaled numbers, and a text pipeline (StringNormalizer, ONNX
Runtime's Tokenizer, TfIdfVectorizer). (ember
computes the linear and SVM scores in double, ONNX Runtime in float: on the SVR ember
is 2e-7 from scikit-learn's own prediction, ONNX Runtime 3e-6, so the error measured
here is mostly ONNX Runtime's.)
Exits 77 (ctest's skip) with the reason when scikit-learn or skl2onnx is missing.
"""
import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_models import check_case, ort_session  # noqa: E402  (same runner and metric)

TOLERANCE = 1e-4
FEATURES = 8
ROWS = 257
ML_OPSET = {"": 17, "ai.onnx.ml": 3}


def data(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((600, FEATURES)).astype(np.float32)
    y_reg = x[:, 0] + x[:, 1] ** 2 + 0.1 * rng.standard_normal(600)
    y_binary = (x[:, 0] + x[:, 2] > 0).astype(np.int64)
    y_three = np.digitize(x[:, 0] + x[:, 3], [-0.5, 0.5]).astype(np.int64) * 3 + 1  # labels 1, 4, 7
    return x, y_reg, y_binary, y_three


def estimators():
    """name -> fitted estimator."""
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier, RandomForestRegressor
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    x, y_reg, y_binary, y_three = data(5)
    return {
        "rf_regressor": RandomForestRegressor(20, max_depth=6, random_state=0).fit(x, y_reg),
        "rf_classifier": RandomForestClassifier(15, max_depth=5, random_state=0).fit(x, y_three),
        "gb_classifier_binary": GradientBoostingClassifier(n_estimators=20, random_state=0).fit(x, y_binary),
        "gb_classifier": GradientBoostingClassifier(n_estimators=10, random_state=0).fit(x, y_three),
        "linear_regression": LinearRegression().fit(x, y_reg),
        "logistic_regression_binary": LogisticRegression().fit(x, y_binary),
        "logistic_regression": LogisticRegression().fit(x, y_three),
        "svc": SVC(random_state=0).fit(x, y_three),
        "svc_binary_probabilities": SVC(probability=True, random_state=0).fit(x, y_binary),
        "svc_poly_probabilities": SVC(kernel="poly", degree=2, probability=True, random_state=0).fit(x, y_three),
        "svr": SVR().fit(x, y_reg),
        "scaler_logistic_pipeline": make_pipeline(StandardScaler(), LogisticRegression()).fit(x * 3 + 1, y_three),
    }


def export(estimator, path):
    from skl2onnx import to_onnx

    options = {id(estimator): {"zipmap": False}} if hasattr(estimator, "classes_") else None
    if hasattr(estimator, "steps"):  # a pipeline: the classifier is its last step
        options = {id(estimator.steps[-1][1]): {"zipmap": False}}
    model = to_onnx(estimator, np.zeros((1, FEATURES), np.float32), target_opset=ML_OPSET, options=options)
    model.ir_version = 8  # what the pinned ONNX Runtime reads
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def pipeline_models():
    """name -> (ONNX model, inputs): the default ZipMap output, a string column beside
    numbers, text."""
    import pandas as pd
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    x, _, _, y_three = data(5)
    models = {}
    zipmap = LogisticRegression().fit(x, y_three)
    models["logistic_regression_zipmap"] = (
        to_onnx(zipmap, x[:1], target_opset=ML_OPSET),
        {"X": np.random.default_rng(99).standard_normal((ROWS, FEATURES)).astype(np.float32)})

    # String targets: the classifiers' labels are strings (string label tensor, ZipMap
    # keyed by strings).
    from sklearn.ensemble import RandomForestClassifier
    named = np.array(["low", "mid", "hög"])[(y_three - 1) // 3]
    test_x = {"X": np.random.default_rng(98).standard_normal((ROWS, FEATURES)).astype(np.float32)}
    models["rf_string_labels_zipmap"] = (
        to_onnx(RandomForestClassifier(10, max_depth=4, random_state=0).fit(x, named), x[:1], target_opset=ML_OPSET),
        test_x)
    models["logistic_string_labels_zipmap"] = (
        to_onnx(LogisticRegression().fit(x, named), x[:1], target_opset=ML_OPSET), test_x)

    rng = np.random.default_rng(6)
    cities = np.array(["paris", "lyon", "nice", "brest", "köln", ""])

    def frame(n):
        return pd.DataFrame({"city": cities[rng.integers(0, len(cities), n)],
                             "a": rng.standard_normal(n).astype(np.float32),
                             "b": rng.standard_normal(n).astype(np.float32)})
    train = frame(600)
    y = (train.city.isin(["paris", "nice"]) ^ (train.a > 0)).astype(np.int64)
    columns = Pipeline([("prep", ColumnTransformer([("city", OneHotEncoder(handle_unknown="ignore"), ["city"]),
                                                    ("numbers", StandardScaler(), ["a", "b"])])),
                        ("classify", LogisticRegression())]).fit(train, y)
    test = frame(ROWS)
    test.loc[::7, "city"] = "unseen"
    models["column_transformer_strings"] = (
        to_onnx(columns, initial_types=[("city", StringTensorType([None, 1])), ("a", FloatTensorType([None, 1])),
                                        ("b", FloatTensorType([None, 1]))], target_opset=ML_OPSET),
        {"city": test[["city"]].to_numpy().astype(str), "a": test[["a"]].to_numpy(), "b": test[["b"]].to_numpy()})

    words = ["the", "cat", "dog", "sat", "on", "mat", "Barked", "quick", "brown", "fox", "été", "loves"]
    texts = np.array([" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(400)])
    labels = np.array([("cat" in t) + 2 * ("dog" in t.lower()) for t in texts], np.int64)
    text = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression()).fit(texts, labels)
    # ONNX Runtime's StringNormalizer wants a locale the machine has (en_US.UTF-8 by default).
    options = {id(text.steps[-1][1]): {"zipmap": False}, id(text.steps[0][1]): {"locale": "C.UTF-8"}}
    test_texts = np.array([" ".join(rng.choice(words, rng.integers(0, 9))) for _ in range(ROWS)]).reshape(-1, 1)
    models["tfidf_text_pipeline"] = (
        to_onnx(text, initial_types=[("text", StringTensorType([None, 1]))], target_opset=ML_OPSET, options=options),
        {"text": test_texts})
    return models


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--infer", required=True, help="path to ember's infer program")
    parser.add_argument("--work", required=True, help="folder for the exported models and outputs")
    parser.add_argument("--models", default=None, help="comma-separated subset (default: all)")
    args = parser.parse_args()
    try:
        import pandas  # noqa: F401
        import skl2onnx  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed (pip install -r scripts/requirements.txt)")
        return 77
    warnings.filterwarnings("ignore")  # sklearn's convergence and skl2onnx's opset notes
    models = estimators()
    pipelines = pipeline_models()
    names = args.models.split(",") if args.models else list(models) + list(pipelines)
    models.update(pipelines)
    unknown = [n for n in names if n not in models]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(models)}")
    os.makedirs(args.work, exist_ok=True)
    infer = os.path.abspath(args.infer)
    print(f"ember vs ONNX Runtime on scikit-learn exports; metric as check_models.py, <= {TOLERANCE:g}; "
          "labels equal", flush=True)
    passed = failed = 0
    for name in names:
        path = os.path.join(args.work, f"{name}.onnx")
        if name in pipelines:
            model, inputs = pipelines[name]
            model.ir_version = 8  # what the pinned ONNX Runtime reads
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
        else:
            export(models[name], path)
            inputs = {"X": np.random.default_rng(99).standard_normal((ROWS, FEATURES)).astype(np.float32)}
        if check_case(infer, ort_session(path), path, name, inputs, os.path.join(args.work, name), TOLERANCE):
            passed += 1
        else:
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

import importlib.util


def evaluate(path, split="dev"):
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"score": float(module.value())}

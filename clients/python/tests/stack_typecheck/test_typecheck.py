"""The package's type hints as its users' type checkers read them: every
public function and method of the public modules annotated, the package
clean under mypy (the typecheck stack's, clients/python/locks/typecheck.txt,
with the [tool.mypy] settings of pyproject.toml), and the installed package
read through its py.typed marker, so that a wrong call in a user's script is
an error there.
"""

import importlib
import inspect
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))  # clients/python

# The modules a user imports; the others (pixelis._*) are the package's own.
PUBLIC_MODULES = ["pixelis", "pixelis.sdk", "pixelis.trl", "pixelis.client", "pixelis.vector", "pixelis.spaces",
                  "pixelis.png"]


def public_callables(mod):
    """(qualified name, function) of every public function and method mod
    offers: the names of its __all__, else the public names it defines; for a
    class, its constructor and the public methods and properties it defines."""
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__]
    for name in names:
        obj = getattr(mod, name)
        if inspect.isfunction(obj):
            yield "%s.%s" % (mod.__name__, name), obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    yield "%s.%s.%s" % (mod.__name__, name, attr), member


def missing_annotations(fn):
    """The parameters of fn (self and cls aside) and its return that carry no annotation."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    out = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append("return")
    return out


def mypy(*args, cwd):
    """mypy's exit code and output, with a cache of its own."""
    with tempfile.TemporaryDirectory(prefix="pixelis-mypy-") as cache:
        p = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", cache, *args], cwd=cwd,
                           capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class PublicAPI(unittest.TestCase):
    def test_every_public_function_is_annotated(self):
        checked, bare = 0, []
        for name in PUBLIC_MODULES:
            for qualname, fn in public_callables(importlib.import_module(name)):
                checked += 1
                missing = missing_annotations(fn)
                if missing:
                    bare.append("%s: %s" % (qualname, ", ".join(missing)))
        self.assertGreater(checked, 80, "the walk found too few functions to have looked at the API")
        self.assertEqual(bare, [], "public functions without type hints:\n" + "\n".join(bare))

    def test_the_package_type_checks(self):
        code, out = mypy("--config-file", os.path.join(SOURCE, "pyproject.toml"), os.path.join(SOURCE, "pixelis"),
                         cwd=SOURCE)
        self.assertEqual(code, 0, out)

    def test_a_users_checker_reads_the_installed_hints(self):
        import pixelis
        self.assertFalse(os.path.abspath(pixelis.__file__).startswith(os.path.join(SOURCE, "pixelis")),
                         "pixelis imports from the source tree, not the installed package: %s" % pixelis.__file__)
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(pixelis.__file__), "py.typed")),
                        "the installed package has no py.typed marker")
        good = ("from pixelis import Client, VectorEnv, sdk\n"
                "from pixelis.trl import PixelisCallback, reward_names\n"
                "run: sdk.Run = sdk.connect(components=['final'], reports=['episodes'], default_weights={'final': 1.0})\n"
                "for c in run.step_boundary(0):\n"
                "    c.ack(c.kind != 'stop', 'a reason')\n"
                "run.log(0, {'episodes': 4, 'reward/final/raw': 0.5})\n"
                "status: str = sdk.training_loop(run, lambda step, stage: {'x': stage.weights['final']}, 3)\n"
                "ep = Client('http://127.0.0.1:8765').new_episode(split='val', index=1)\n"
                "mask: list[bool] = ep.mask\n")
        bad = good + "run.log('zero', {'episodes': 4})\nClient(8765)\n"
        with tempfile.TemporaryDirectory(prefix="pixelis-user-") as d:
            for name, text in (("good.py", good), ("bad.py", bad)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            code, out = mypy("--strict", "good.py", cwd=d)
            self.assertEqual(code, 0, out)
            code, out = mypy("bad.py", cwd=d)
            self.assertNotEqual(code, 0, out)
            self.assertIn('Argument 1 to "log" of "Run" has incompatible type "str"; expected "int"', out)
            self.assertIn('Argument 1 to "Client" has incompatible type "int"; expected "str"', out)


if __name__ == "__main__":
    unittest.main()

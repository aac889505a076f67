"""pip install of the package without PyPI: the build backend
(setuptools, with wheel) must come from the environment, as on a machine
without network access (docs/install.md, "Installing the command")."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from _util import ROOT

MISSING = [m for m in ("pip", "setuptools", "wheel") if importlib.util.find_spec(m) is None]


@unittest.skipIf(MISSING, "cannot test pip install without %s for %s (Debian: python3-pip, python3-setuptools, "
                 "python3-wheel)" % (", ".join(MISSING), sys.executable))
class PipInstallOffline(unittest.TestCase):
    def test_install_and_import(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A copy, so that the in-tree build's build/ and egg-info stay
            # out of the clone.
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("tests", "__pycache__"))
            target = os.path.join(tmp, "site")
            env = dict(os.environ)
            env.pop("PIP_FIND_LINKS", None)  # no local wheel cache either
            run = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps",
                 "--disable-pip-version-check", "--target", target, src],
                env=env, capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, "pip install failed:\n" + run.stdout + run.stderr)
            # The installed package, imported from outside the clone.
            env["PYTHONPATH"] = target
            out = subprocess.run(
                [sys.executable, "-c", "import rnnaudit; print(rnnaudit.__file__); print(rnnaudit.to_long_csv.__name__)"],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            path, name = out.stdout.split()
            self.assertEqual(os.path.dirname(path), os.path.join(target, "rnnaudit"))
            self.assertEqual(name, "to_long_csv")
            dist = [d for d in os.listdir(target) if d.endswith(".dist-info")]
            self.assertEqual(dist, ["rnnaudit-0.1.0.dist-info"])


if __name__ == "__main__":
    unittest.main()

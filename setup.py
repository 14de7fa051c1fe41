"""`pip install .` for the onnxgpu Python package: builds the `_onnxgpu` extension with the project's
CMake (target _onnxgpu: the engine library and the pybind11 module) and installs python/onnxgpu.

Needs the Debian packages of scripts/deps.txt (cmake, ninja, g++, libonnx-dev, pybind11-dev,
python3-dev...) and Dawn (scripts/build fetches it into .cache/). Dawn is loaded at run time from
the path built in (ONNXGPU_CACHE_DIR or <repo>/.cache) or from $ONNXGPU_DAWN_LIB.

Environment: ONNXGPU_BUILD_DIR (CMake build folder; default build/pip), ONNXGPU_CACHE_DIR (Dawn and
ccache), CMAKE_BUILD_PARALLEL_LEVEL. No pyproject.toml on purpose: pip then builds with the setuptools
already installed (python3-setuptools), with no download. See python/README.md.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
SETUPTOOLS_DIR = os.path.join("build", "setuptools")  # setuptools' own files, out of the source tree
os.makedirs(os.path.join(ROOT, SETUPTOOLS_DIR), exist_ok=True)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("ONNXGPU_BUILD_DIR") or os.path.join(ROOT, "build", "pip")
        cache_dir = os.environ.get("ONNXGPU_CACHE_DIR") or os.path.join(ROOT, ".cache")
        env = dict(os.environ)
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                    f"-DPYTHON_EXECUTABLE={sys.executable}", "-DONNXGPU_BUILD_PYTHON=ON",
                    f"-DONNXGPU_DAWN_LIB={os.path.join(cache_dir, 'dawn-0.1.7', 'libwebgpu_wrapper.so')}"]
            if shutil.which("ninja"):
                args += ["-G", "Ninja"]
            if shutil.which("ccache"):
                args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            subprocess.run(args, check=True)
        if shutil.which("ccache"):
            env.setdefault("CCACHE_DIR", os.path.join(cache_dir, "ccache"))
            env.setdefault("CCACHE_BASEDIR", ROOT)
            env.setdefault("CCACHE_NOHASHDIR", "1")
        subprocess.run(["cmake", "--build", build_dir, "--target", "_onnxgpu"], check=True, env=env)
        built = os.path.join(build_dir, "python", "onnxgpu")
        so = [f for f in os.listdir(built) if f.startswith("_onnxgpu") and f.endswith(".so")]
        if len(so) != 1:
            raise RuntimeError(f"expected one _onnxgpu*.so in {built}, found {so}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(built, so[0]), dest)


setup(
    name="onnxgpu",
    version="0.1.0",
    description="Run ONNX models on WebGPU (Dawn) with graph capture and exact INT64; ONNX Runtime's Python API",
    packages=["onnxgpu"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("onnxgpu._onnxgpu")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": SETUPTOOLS_DIR}, "egg_info": {"egg_base": SETUPTOOLS_DIR}},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)

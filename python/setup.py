"""The plume package with libplume inside it (pyproject.toml holds the rest).

`pip install --no-build-isolation --no-index <repository>/python` runs this: it builds
libplume with CMake from the repository this folder is in (the `plume` target alone, in
PLUME_PIP_BUILD_DIR or python/build/cmake, with PLUME_CMAKE_ARGS added to CMake's
arguments as scripts/build adds them) and copies it into the package as plume/libplume.so,
where plume._native looks first after PLUME_LIBRARY: no PLUME_LIBRARY, no LD_LIBRARY_PATH.
From an installed prefix (PREFIX/python, PREFIX/lib and PREFIX/include beside it) it
copies PREFIX/lib's library instead. The version is the library's (plume/version.h).
"""

import glob
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # the repository, or the install prefix


def version():
    """PLM_VERSION_MAJOR.MINOR.PATCH of plume/version.h."""
    with open(os.path.join(ROOT, "include", "plume", "version.h")) as header:
        parts = dict(re.findall(r"#define PLM_VERSION_(MAJOR|MINOR|PATCH) (\d+)", header.read()))
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def built_library():
    """libplume.so built by CMake from the repository; its path."""
    base = os.environ.get("PLUME_PIP_BUILD_DIR") or os.path.join(HERE, "build")
    build = os.path.join(base, "cmake")
    configure = ["cmake", "-S", ROOT, "-B", build, "-DPLUME_BUILD_TESTS=OFF"]
    configure += shlex.split(os.environ.get("PLUME_CMAKE_ARGS", ""))
    subprocess.run(configure, check=True)
    subprocess.run(["cmake", "--build", build, "--target", "plume", "-j",
                    os.environ.get("PLUME_PIP_JOBS", str(os.cpu_count() or 1))], check=True)
    return os.path.join(build, "libplume.so")


def installed_library():
    """PREFIX/lib's libplume.so (an installed prefix: no sources to build)."""
    found = sorted(glob.glob(os.path.join(ROOT, "lib", "libplume.so"))
                   + glob.glob(os.path.join(ROOT, "lib", "*", "libplume.so")))
    if not found:
        raise SystemExit("plume: %s has neither plume's sources (CMakeLists.txt) nor an "
                         "installed lib/libplume.so to put in the package" % ROOT)
    return found[0]


class BuildWithLibrary(build_py):
    """build_py, then libplume into the package (the real file, as libplume.so)."""

    def run(self):
        super().run()
        if os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            library = built_library()
        else:
            library = installed_library()
        target = os.path.join(self.build_lib, "plume", "libplume.so")
        shutil.copyfile(os.path.realpath(library), target)
        os.chmod(target, 0o755)


class WithLibrary(Distribution):
    """A platform wheel: the package holds a compiled library."""

    def has_ext_modules(self):
        return True


def options():
    """setuptools' own build folders under PLUME_PIP_BUILD_DIR when it is set (a test
    leaves the source tree as it was), else its defaults (python/build)."""
    base = os.environ.get("PLUME_PIP_BUILD_DIR")
    if not base:
        return {}
    os.makedirs(os.path.join(base, "egg-info"), exist_ok=True)
    return {"build": {"build_base": os.path.join(base, "setuptools")},
            "egg_info": {"egg_base": os.path.join(base, "egg-info")}}


setup(version=version(), cmdclass={"build_py": BuildWithLibrary}, distclass=WithLibrary,
      options=options())

"""The plume package with libplume inside it (pyproject.toml holds the rest).

`pip install --no-build-isolation --no-index <repository>/python` runs this: it builds
libplume and libplume_io with CMake from the repository this folder is in (the `plume` and
`plume_io` targets alone, in PLUME_PIP_BUILD_DIR or python/build/cmake, with
PLUME_CMAKE_ARGS added to CMake's arguments as scripts/build adds them) and copies them into
the package as plume/libplume.so and plume/libplume_io.so, where plume._native looks first
after PLUME_LIBRARY (and plume._frames beside libplume): no PLUME_LIBRARY, no
LD_LIBRARY_PATH. libplume_io finds libplume, which the module loads first, by its soname.
From an installed prefix (PREFIX/python, PREFIX/lib and PREFIX/include beside it) it
copies PREFIX/lib's libraries instead. The version is the library's (plume/version.h).
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


LIBRARIES = ("plume", "plume_io")  # lib<name>.so, each copied into the package


def built_libraries():
    """libplume.so and libplume_io.so built by CMake from the repository; their paths."""
    base = os.environ.get("PLUME_PIP_BUILD_DIR") or os.path.join(HERE, "build")
    build = os.path.join(base, "cmake")
    configure = ["cmake", "-S", ROOT, "-B", build, "-DPLUME_BUILD_TESTS=OFF"]
    configure += shlex.split(os.environ.get("PLUME_CMAKE_ARGS", ""))
    subprocess.run(configure, check=True)
    subprocess.run(["cmake", "--build", build, "--target", *LIBRARIES, "-j",
                    os.environ.get("PLUME_PIP_JOBS", str(os.cpu_count() or 1))], check=True)
    return [os.path.join(build, "lib%s.so" % name) for name in LIBRARIES]


def installed_libraries():
    """PREFIX/lib's libplume.so and libplume_io.so (an installed prefix: no sources to
    build)."""
    paths = []
    for name in LIBRARIES:
        found = sorted(glob.glob(os.path.join(ROOT, "lib", "lib%s.so" % name))
                       + glob.glob(os.path.join(ROOT, "lib", "*", "lib%s.so" % name)))
        if not found:
            raise SystemExit("plume: %s has neither plume's sources (CMakeLists.txt) nor an "
                             "installed lib/lib%s.so to put in the package" % (ROOT, name))
        paths.append(found[0])
    return paths


class BuildWithLibrary(build_py):
    """build_py, then libplume and libplume_io into the package (the real files, as
    libplume.so and libplume_io.so)."""

    def run(self):
        super().run()
        if os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            libraries = built_libraries()
        else:
            libraries = installed_libraries()
        for library in libraries:
            target = os.path.join(self.build_lib, "plume", os.path.basename(library))
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

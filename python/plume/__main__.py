"""python3 -m plume info: what this plume is and where it runs.

Prints the module's version and file, the library it loaded (its path and version), the
frame reading library (libplume_io: where it was found, or why not), the backend a default
context gets and its device, the ops of plume.ops, and the versions of
numpy and of torch and cv2 where they import. Exits 0 when a context could be made on the
default backend; 1, saying why, when not; 2 for a usage error.
"""

import sys


def info(out=sys.stdout):
    import numpy as np

    import plume
    from plume import _frames, _native

    def line(name, value):
        print("%-12s %s" % (name + ":", value), file=out)

    line("plume", "%s (%s)" % (plume.__version__, plume.__file__))
    line("library", "%s (%s)" % (plume.version(), _native.lib._name))
    try:
        line("frames io", _frames.library()._name)
    except plume.Error as error:  # plume works without it; only open_frames needs it
        line("frames io", "none: %s" % error)
    status = 0
    try:
        ctx = plume.Context()
        line("backend", "%s, device %d" % (ctx.backend, ctx.device))
        ctx.close()
    except plume.Error as error:
        line("backend", "none: %s" % error)
        status = 1
    line("ops", " ".join(plume.ops.__all__))
    line("numpy", np.__version__)
    for name in ("torch", "cv2"):
        try:
            module = __import__(name)
            line(name, getattr(module, "__version__", "present"))
        except ImportError:
            line(name, "not installed")
    return status


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["info"]:
        print("usage: python3 -m plume info", file=sys.stderr)
        return 2
    return info()


if __name__ == "__main__":
    sys.exit(main())

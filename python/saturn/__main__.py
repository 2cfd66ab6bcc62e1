"""The `saturn` command line (`saturn optimize`, `saturn info`, ...): the
program the package carries, run with this interpreter for onnxruntime's
harness. `python -m saturn ARGS` and the `saturn` console command run it."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def program() -> str:
    """The saturn program: the package's own (bin/saturn), or in a build
    tree, the one its build made (bin/saturn links to tools/saturn)."""
    path = Path(__file__).parent / "bin" / "saturn"
    if not (path.is_file() and os.access(path, os.X_OK)):
        sys.exit(f"saturn: the saturn program is missing from the package ({path})")
    return str(path)


def main() -> None:
    # Importing the package (as this module's import does) has pointed the
    # program at the packaged harness, for this interpreter.
    binary = program()
    sys.stdout.flush()
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()

"""The timing (readonly: the command names it): byte-compiles pkg/ afresh with
``python -m compileall`` and prints the wall time in milliseconds."""

import subprocess
import sys
import time

start = time.perf_counter()
subprocess.run([sys.executable, "-m", "compileall", "-q", "-f", "pkg"], check=True)
print(f"compile_ms: {(time.perf_counter() - start) * 1000:.1f}")
